/**
 * Write-back that keeps its promise under faults.
 *
 * - `outbox.mirror_behind`: an applied change whose item the mirror has not
 *   re-read yet. The push that applies a change writes what it knows (the new
 *   version, the values sent) into the mirror row's `_raw` in the same
 *   transaction and sets this; `row_version` stays behind, so the re-read
 *   and any pull rewrite the row, and the re-read clears the flag. Every later push (and pull) re-reads
 *   such items first, so a kill between a write and its re-read leaves a
 *   durable state that the next run resolves.
 * - The capture function takes the base version of an edit from the
 *   platform's last known version (`listsync.mirror_base_version`): the
 *   greater of `row_version` (a refill marker, -1, or NULL count as unknown)
 *   and the version field of `_raw`, which a settled write sets to the
 *   version it produced. A refill in progress, or a write not yet re-read,
 *   can never make an edit look conflicting.
 * - Its trigger arguments, after the list, field columns, numeric columns and
 *   the delete option: the version field's name, the columns of fields
 *   removed from the platform (an edit of one is refused with a message: it
 *   could never be sent) and the columns of whole-number fields (a fraction
 *   written to one is refused, naming the column and the field's slot).
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.outbox add column mirror_behind boolean not null default false');
  await knex.raw(`create index outbox_mirror_behind on listsync.outbox (list_name) where mirror_behind`);
  await knex.raw(`create index outbox_applied_at on listsync.outbox (list_name, applied_at) where status = 'applied'`);
  await knex.raw(migrationSql('20261126060000_write_back_settled', 'helpers'));
  await knex.raw(migrationSql('20261126060000_write_back_settled', 'mirror_capture'));
}

export async function down(knex: Knex): Promise<void> {
  // The previous function body (migration 20261123001200).
  await knex.raw(migrationSql('20261123001200_push_deletes', 'mirror_capture'));
  await knex.raw('drop function if exists listsync.mirror_check_values(text, text, jsonb, jsonb, text[], text[])');
  await knex.raw('drop function if exists listsync.mirror_base_version(jsonb, text)');
  await knex.raw('drop index if exists listsync.outbox_applied_at');
  await knex.raw('drop index if exists listsync.outbox_mirror_behind');
  await knex.raw('alter table listsync.outbox drop column mirror_behind');
}
