/**
 * Whether a job family succeeded after its latest failure (src/store/list-health.ts)
 * is one index probe per list and job: the succeeded runs by list, job and start.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create index if not exists sync_runs_succeeded_by_list_job on listsync.sync_runs (list_name, job, started_at) where status = 'succeeded'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists listsync.sync_runs_succeeded_by_list_job');
}
