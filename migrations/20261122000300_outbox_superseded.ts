/**
 * A settled local change that was not applied because the platform's newer
 * version won (conflict policy remote-wins, or `conflicts resolve --keep
 * remote`) ends as 'superseded', so "applied" only ever means applied.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.outbox drop constraint outbox_status_check');
  await knex.raw(
    `alter table listsync.outbox add constraint outbox_status_check check (status in ('pending','sending','applied','conflict','failed','superseded'))`,
  );
  await knex.raw('alter table listsync.outbox add column sent_changes jsonb');
  // The platform's values the local change was made on (the mirror row's _raw at the time), for `conflicts show`.
  await knex.raw('alter table listsync.conflicts add column base jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `update listsync.outbox set status = 'failed', last_error = coalesce(last_error, 'superseded') where status = 'superseded'`,
  );
  await knex.raw('alter table listsync.conflicts drop column base');
  await knex.raw('alter table listsync.outbox drop column sent_changes');
  await knex.raw('alter table listsync.outbox drop constraint outbox_status_check');
  await knex.raw(
    `alter table listsync.outbox add constraint outbox_status_check check (status in ('pending','sending','applied','conflict','failed'))`,
  );
}
