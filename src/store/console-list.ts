/**
 * The console's page of one list: its recent runs (paged, newest first) and
 * the last day's series of lag and requests, from `listsync.sync_runs` alone.
 *
 * Invariants:
 * - the lag at an instant is the time since the start of the last successful
 *   pull or backfill before it (what `status` calls lag): it climbs until a
 *   pull finishes and drops to that pull's own duration;
 * - requests are summed per hour by the hour a run started in, over 24 whole hours
 *   (test/console/console-http.test.ts › "a list's page draws its runs, chart, schema log and mapping").
 */
import type { Knex } from '../db.js';
import { RUNS_TABLE, type RunRow } from './runs.js';

export type ConsoleRun = Pick<
  RunRow,
  'id' | 'job' | 'status' | 'started_at' | 'finished_at' | 'pages' | 'requests' | 'retries' | 'error'
> & { rows_changed: number; total: number };

/** A page of the list's runs, newest first, with how many there are. */
export async function recentRuns(db: Knex, listName: string, page: { offset: number; limit: number }): Promise<ConsoleRun[]> {
  const r = await db.raw<{ rows: (ConsoleRun & { rows_changed: string; total: string })[] }>(
    `select id, job, status, started_at, finished_at, pages, requests, retries, error,
            (rows_inserted + rows_updated + rows_deleted + rows_undeleted)::bigint as rows_changed,
            count(*) over () as total
       from ${RUNS_TABLE} where list_name = ? order by id desc limit ? offset ?`,
    [listName, page.limit, page.offset],
  );
  return r.rows.map((x) => ({ ...x, rows_changed: Number(x.rows_changed), total: Number(x.total) }));
}

export interface SuccessfulPull {
  started_at: Date;
  finished_at: Date;
  /** Start of the successful pull before it (null: none recorded). */
  previous_start: Date | null;
}

/** Successful pulls and backfills that finished in the last `hours`, oldest first, each with the start of the one before. */
export async function successfulPulls(db: Knex, listName: string, hours: number): Promise<SuccessfulPull[]> {
  const r = await db.raw<{ rows: SuccessfulPull[] }>(
    `select started_at, finished_at, previous_start from (
       select started_at, finished_at, lag(started_at) over (order by started_at, id) as previous_start
         from ${RUNS_TABLE}
        where list_name = ? and job in ('pull', 'backfill') and status = 'succeeded' and finished_at is not null
          and finished_at > now() - make_interval(hours => ?) - interval '7 days'
     ) x where finished_at > now() - make_interval(hours => ?) order by finished_at`,
    [listName, hours, hours],
  );
  return r.rows;
}

/** Requests of every job of the list, per hour started, over the last `hours` whole hours (oldest first, zeros included). */
export async function requestsPerHour(db: Knex, listName: string, hours: number): Promise<{ hour: Date; requests: number }[]> {
  const r = await db.raw<{ rows: { hour: Date; requests: string }[] }>(
    `select h.hour, coalesce(sum(x.requests), 0) as requests
       from generate_series(date_trunc('hour', now()) - make_interval(hours => ? - 1), date_trunc('hour', now()), interval '1 hour') as h(hour)
       left join ${RUNS_TABLE} x on x.list_name = ? and date_trunc('hour', x.started_at) = h.hour
      group by h.hour order by h.hour`,
    [hours, listName],
  );
  return r.rows.map((x) => ({ hour: x.hour, requests: Number(x.requests) }));
}
