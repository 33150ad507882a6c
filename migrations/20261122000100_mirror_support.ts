/**
 * Change capture for the mirror tables: one trigger function, attached to each
 * mirror table by `ensureMirrorTable` (src/mirror/triggers.ts) with the list's
 * name, its field columns and its numeric columns as arguments.
 *
 * - Writes made by listsync itself run with the transaction-local setting
 *   `listsync.writer = on` and are never captured (nor refused).
 * - UPDATE: the changed field columns → `listsync.outbox` as op 'update' with
 *   the row's old `row_version` as base; edits before a push coalesce into the
 *   one open change (the first base is kept). Edits of a row created locally
 *   and not yet pushed merge into its 'create'. Changing id, row_version,
 *   created_at or modified_at is refused.
 * - INSERT: op 'create' with the row's (provisional) id as local_id and every
 *   non-null field column.
 * - DELETE and TRUNCATE: refused (the platform interface has no delete).
 *
 * Numeric values are written into `changes` as JSON strings, so that numbers
 * beyond 2^53 survive a JSON.parse on the way out.
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

export async function up(knex: Knex): Promise<void> {
  // Finds the open 'create' of a locally inserted row without scanning the outbox history.
  await knex.raw(`
    create index if not exists outbox_open_create_by_local_id on listsync.outbox (list_name, local_id)
    where op = 'create' and status in ('pending', 'sending', 'conflict')`);

  await knex.raw(migrationSql('20261122000100_mirror_support', 'mirror_capture'));
}

export async function down(knex: Knex): Promise<void> {
  // Also removes the triggers that use it; ensureMirrorTable attaches them again after a re-migrate.
  await knex.raw('drop function if exists listsync.mirror_capture() cascade');
  await knex.raw('drop index if exists listsync.outbox_open_create_by_local_id');
}
