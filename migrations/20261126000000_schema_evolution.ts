/**
 * Two run counters of schema evolution (issue 25):
 * - `rows_missing_keys`: items that omitted a field the mirror has a column
 *   for; that column kept what it held (unless `platform.omitsEmptyValues`).
 * - `rows_unstorable`: items with text PostgreSQL cannot hold (NUL, lone
 *   surrogates): the typed columns got the closest text, `_raw` the exact
 *   value, escaped.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'alter table listsync.sync_runs add column rows_missing_keys bigint not null default 0, add column rows_unstorable bigint not null default 0',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.sync_runs drop column rows_missing_keys, drop column rows_unstorable');
}
