/**
 * listsync's own columns of a mirror table are read-only to users' SQL, all of
 * them: `id`, `row_version`, `created_at`, `modified_at` (refused before) and
 * now `_raw`, `_synced_at`, `_deleted_at` too (test/mirror/own-columns-read-only.test.ts).
 * An UPDATE that changes one, or an INSERT that sets `_raw`, `_synced_at` or
 * `_deleted_at`, is refused with SQLSTATE P0001 and a message naming the
 * column. listsync's own writes (marked `listsync.writer = on`, transaction-
 * local) skip the capture trigger and are unaffected; the capture's own
 * marking of a captured delete (`_deleted_at`) marks itself for that one
 * statement. The capture function is shared by every mirror table, so tables
 * made before this migration get the rule as it runs.
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

const THIS = '20261130030000_own_columns_read_only';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(migrationSql(THIS, 'mirror_check_own_columns'));
  await knex.raw(migrationSql(THIS, 'mirror_capture'));
}

export async function down(knex: Knex): Promise<void> {
  // The previous function body (migration 20261128000300).
  await knex.raw(migrationSql('20261128000300_capture_read_only', 'mirror_capture'));
  await knex.raw('drop function if exists listsync.mirror_check_own_columns(text, text, jsonb, jsonb)');
}
