/**
 * The console's budget page: the account's requests over the last hour by
 * job (from `listsync.sync_runs.requests`); what the limiter learned is read
 * by `readLimiterState` in rate-budget.ts.
 *
 * Invariant: a run counts in the hour when it was still running during it;
 * its requests are not split by time (the runs table keeps totals only).
 */
import type { Knex } from '../db.js';
import { RUNS_TABLE } from './runs.js';

export interface JobRequests {
  job: string;
  runs: number;
  requests: number;
  retries: number;
}

/** Requests and retries per job of the runs active in the last `minutes`, busiest first. */
export async function requestsByJob(db: Knex, minutes: number): Promise<JobRequests[]> {
  const r = await db.raw<{ rows: { job: string; runs: string; requests: string; retries: string }[] }>(
    `select job, count(*) as runs, coalesce(sum(requests), 0) as requests, coalesce(sum(retries), 0) as retries
       from ${RUNS_TABLE}
      where coalesce(finished_at, now()) > now() - make_interval(mins => ?)
      group by job order by 3 desc, job`,
    [minutes],
  );
  return r.rows.map((x) => ({ job: x.job, runs: Number(x.runs), requests: Number(x.requests), retries: Number(x.retries) }));
}
