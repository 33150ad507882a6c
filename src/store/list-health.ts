/**
 * A list's health is the worst current state of its jobs: the list is failing
 * while the latest failure of one of its job families has no success of the
 * same family started after it. A pull (or backfill) failure stays until a
 * pull or backfill succeeds; a push, a reconcile or any other job that
 * succeeds, however little it did (a push with nothing to send), clears only
 * its own family's failure. `status`, `/healthz`, `/metrics` and the console
 * read it from here (test/list-health.test.ts, test/status.test.ts).
 *
 * Invariants:
 * - the latest failure of a family is found through the partial index
 *   `sync_runs_failed_by_list`, a later success through
 *   `sync_runs_succeeded_by_list_job` (list_name, job, started_at): no walk
 *   over a list's run history;
 * - "started after" compares start times, so a failure serve's queue records
 *   late for a fire that started before a success is not the list's error.
 */
import { RUNS_TABLE } from './runs.js';

/** Job families: a success clears the failures of its own family only. */
const FAMILIES: readonly (readonly string[])[] = [['pull', 'backfill'], ['push'], ['reconcile'], ['users'], ['directory']];

/** The family's latest failure while no success of the family started after it. */
function familyFailure(list: string, jobs: readonly string[]): string {
  const inFamily = `in (${jobs.map((j) => `'${j}'`).join(', ')})`;
  return `(select f.job, f.started_at, f.error
      from (select x.job, x.started_at, x.error from ${RUNS_TABLE} x
             where x.list_name = ${list} and x.status = 'failed' and x.job ${inFamily} order by x.id desc limit 1) f
     where not exists (select 1 from ${RUNS_TABLE} s
                        where s.list_name = ${list} and s.job ${inFamily} and s.status = 'succeeded' and s.started_at > f.started_at))`;
}

/**
 * A subquery (for a lateral join) giving the list's current failure, if
 * any: `failing_job`, `failing_at` (the failed run's start) and
 * `failing_error`; the newest when several families fail. `list` is the SQL
 * expression of the list's name.
 */
export function currentFailureSql(list: string): string {
  return `(select u.job as failing_job, u.started_at as failing_at, u.error as failing_error
     from (${FAMILIES.map((jobs) => familyFailure(list, jobs)).join('\n           union all ')}) u
    order by u.started_at desc limit 1)`;
}
