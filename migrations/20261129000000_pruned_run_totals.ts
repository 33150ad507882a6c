/**
 * `pruned_run_totals`: what the runs removed from `sync_runs` added up to, per
 * list, job and status (serve removes runs older than serve.runHistoryDays).
 * /metrics exports counters summed over the run history
 * (listsync_runs_total, listsync_rows_total, listsync_changes_pushed_total,
 * listsync_reconcile_healed_total); it adds these totals, so a prune never
 * makes a counter go down, which Prometheus would read as a reset
 * (test/run-retention.test.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table listsync.pruned_run_totals (
      list_name text not null,
      job text not null,
      status text not null,
      runs bigint not null default 0,
      rows_inserted bigint not null default 0,
      rows_updated bigint not null default 0,
      rows_unchanged bigint not null default 0,
      rows_deleted bigint not null default 0,
      rows_undeleted bigint not null default 0,
      rows_failed bigint not null default 0,
      rows_missing_keys bigint not null default 0,
      rows_unstorable bigint not null default 0,
      changes_applied bigint not null default 0,
      changes_conflicted bigint not null default 0,
      changes_failed bigint not null default 0,
      healed_missing bigint not null default 0,
      healed_behind bigint not null default 0,
      primary key (list_name, job, status)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table listsync.pruned_run_totals');
}
