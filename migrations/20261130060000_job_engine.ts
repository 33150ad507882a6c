/**
 * The job engine: pg-boss's tables in a schema of their own (`listsync_jobs`,
 * pg-boss 10.4.x's construction plan, which records its version so pg-boss
 * finds it current), the one `stately` queue every list job shares, and on
 * each `sync_runs` row the job it ran for and its attempt (the worker that ran
 * it is the row's `holder`, host:pid) (src/engine/, src/serve/scheduler.ts).
 */
import type { Knex } from 'knex';
import PgBoss from 'pg-boss';

const SCHEMA = 'listsync_jobs';

export async function up(knex: Knex): Promise<void> {
  // The plan brings its own transaction and lock; this migration runs in knex's.
  const plan = PgBoss.getConstructionPlans(SCHEMA)
    .replace(/^\s*BEGIN;\s*$/m, '')
    .replace(/^\s*COMMIT;\s*$/m, '');
  await knex.raw(plan);
  await knex.raw(
    `select ${SCHEMA}.create_queue('listsync', '{"policy":"stately","retryLimit":3,"retryDelay":30,"retryBackoff":true}'::json)`,
  );
  await knex.raw(`
    alter table listsync.sync_runs
      add column job_id uuid,
      add column attempt integer`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.sync_runs drop column job_id, drop column attempt');
  await knex.raw(`drop schema ${SCHEMA} cascade`);
}
