/**
 * The capture refuses, when the SQL is written, what write-back could never
 * deliver (test/sync/not-taken.test.ts, test/migrations.test.ts):
 *
 * - an edit of a column whose field the platform does not let one write
 *   (system, auto-number, calculated, marked read-only: src/mirror/read-only.ts);
 *   the platform would answer success and keep its own value;
 * - a multi-value array holding a NULL element (the platform's arrays have
 *   none: push would refuse the whole change).
 *
 * Each refusal is SQLSTATE P0001 with a message naming the column and the
 * field. The capture function takes three more trigger arguments after the
 * whole-number columns: the read-only columns, their fields' names (same
 * order), and the multi-value columns. Triggers attached with fewer arguments
 * check nothing more.
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(migrationSql('20261128000300_capture_read_only', 'mirror_check_writable'));
  await knex.raw(migrationSql('20261128000300_capture_read_only', 'mirror_capture'));
}

export async function down(knex: Knex): Promise<void> {
  // The previous function body (migration 20261126060000).
  await knex.raw(migrationSql('20261126060000_write_back_settled', 'mirror_capture'));
  await knex.raw('drop function if exists listsync.mirror_check_writable(text, text, jsonb, jsonb, text[], text[], text[])');
}
