/**
 * Deletes written back, and local rows that can always be withdrawn.
 *
 * - The outbox takes op 'delete': the item's ID, the row's `row_version` as
 *   the base and the row's whole content (every field column) as `changes`.
 * - `attempted_at` (when a create was first sent) and `sends` (how many times)
 *   let push look for a create whose answer was lost among the items created
 *   since, and resend it at most once.
 * - `withdrawn_at`: the local row of a create that may have reached the
 *   platform was deleted; push finds the item, if it exists, and deletes it.
 * - `conflicts.op`: what the local change was (an update or a delete).
 *
 * The capture function is replaced. Its delete trigger (attached by
 * src/mirror/triggers.ts) passes the list's name, its field columns, its
 * numeric columns and 'push-deletes' or 'refuse-deletes'. A DELETE of a row:
 * 1. whose create is not confirmed (pending, sending or failed) withdraws the
 *    create (never sent: it is dropped; otherwise push settles it) and the row
 *    goes, whatever the list's option;
 * 2. else, with 'push-deletes', is captured as a 'delete' and the row stays,
 *    marked with `_deleted_at`, until push settles it (applied: the row stays
 *    marked, as reconcile marks items deleted on the platform; a conflict
 *    under remote-wins brings it back);
 * 3. else is refused with a message naming `lists[].pushDeletes`.
 * TRUNCATE is always refused. INSERT and UPDATE are captured as before.
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.outbox drop constraint outbox_op_check');
  await knex.raw(`alter table listsync.outbox add constraint outbox_op_check check (op in ('update','create','delete'))`);
  await knex.raw('alter table listsync.outbox add column attempted_at timestamptz');
  await knex.raw('alter table listsync.outbox add column sends integer not null default 0');
  await knex.raw('alter table listsync.outbox add column withdrawn_at timestamptz');
  await knex.raw(`alter table listsync.conflicts add column op text not null default 'update'`);
  // A create by its local row, failed ones included (withdrawal looks them up).
  await knex.raw(
    `create index if not exists outbox_create_by_local_id on listsync.outbox (list_name, local_id) where op = 'create' and local_id is not null`,
  );
  await knex.raw(migrationSql('20261123001200_push_deletes', 'mirror_capture'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`delete from listsync.outbox where op = 'delete'`);
  await knex.raw('drop index if exists listsync.outbox_create_by_local_id');
  await knex.raw('alter table listsync.conflicts drop column op');
  await knex.raw('alter table listsync.outbox drop column withdrawn_at');
  await knex.raw('alter table listsync.outbox drop column sends');
  await knex.raw('alter table listsync.outbox drop column attempted_at');
  await knex.raw('alter table listsync.outbox drop constraint outbox_op_check');
  await knex.raw(`alter table listsync.outbox add constraint outbox_op_check check (op in ('update','create'))`);
  // The previous function body (migration 20261122000100): deletes refused.
  await knex.raw(migrationSql('20261122000100_mirror_support', 'mirror_capture'));
}
