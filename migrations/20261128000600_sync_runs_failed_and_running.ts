/**
 * `sync_runs_failed_by_list` and `sync_runs_running_by_list`: a list's failed
 * runs and its runs still running, newest first, by (list_name, id). Status
 * (`listsync status`, `/healthz`, `/metrics`) asks for every list's latest
 * failed run and whether a run of it is still running; through
 * `sync_runs_by_list` alone a list that rarely fails or is idle is answered by
 * walking all its runs (src/store/status-facts.ts; test/migrations.test.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create index if not exists sync_runs_failed_by_list on listsync.sync_runs (list_name, id) where status = 'failed'`);
  await knex.raw(`create index if not exists sync_runs_running_by_list on listsync.sync_runs (list_name, id) where status = 'running'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists listsync.sync_runs_running_by_list');
  await knex.raw('drop index if exists listsync.sync_runs_failed_by_list');
}
