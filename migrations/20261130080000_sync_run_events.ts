/**
 * `sync_run_events`: what a run did, in order (its plan, every platform request
 * with its answer, retries, pages with their row counts, the outcome), read by
 * `listsync runs show ID`. Written in batches as the run goes
 * (src/store/run-events.ts); `seq` orders a run's events whatever order the
 * batches land in. No foreign key: a run's row is written before its events and
 * the run-history prune deletes both in one statement (src/store/runs.ts), so an
 * event never outlives its run and truncating the history stays one statement
 * (test/run-trace.test.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table listsync.sync_run_events (
      run_id bigint not null,
      seq integer not null,
      at timestamptz not null,
      kind text not null,
      detail jsonb not null default '{}',
      primary key (run_id, seq)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table listsync.sync_run_events');
}
