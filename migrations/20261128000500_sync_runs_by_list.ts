/**
 * `sync_runs_by_list`: a list's runs newest first, by (list_name, id). The
 * console's overview reads each list's last run and last outcome through it
 * in one statement for hundreds of lists; without it, a list that has not run
 * for a while is found by walking the whole run history backwards
 * (bench/console.bench.ts; test/migrations.test.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index if not exists sync_runs_by_list on listsync.sync_runs (list_name, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists listsync.sync_runs_by_list');
}
