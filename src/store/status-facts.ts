/**
 * What status reads of each configured list from listsync's own tables, in
 * one statement for all lists: the pull's state, the latest run of each kind
 * status names, the list's current failure (src/store/list-health.ts),
 * whether a run is open, unsent and failed changes, open conflicts, and
 * whether the list's mirror table exists.
 *
 * Invariants:
 * - one query however many lists (test/status.test.ts › "reads 50 lists with
 *   as many queries as 2"); each latest run is found through an index on
 *   (list_name, id), newest first: `sync_runs_by_list`, or the partial
 *   `sync_runs_failed_by_list` / `sync_runs_running_by_list`;
 * - rows come back in the order the lists were given.
 */
import type { Knex } from '../db.js';
import { CONFLICTS_TABLE } from './conflicts.js';
import { currentFailureSql } from './list-health.js';
import { OUTBOX_TABLE } from './outbox.js';
import { RUNS_TABLE } from './runs.js';
import { STATE_TABLE } from './state.js';

export interface StatusFacts {
  name: string;
  table: string;
  watermark: string | null;
  checkpoint: { nextPage?: number } | null;
  last_success_at: Date | null;
  /** The latest pull or backfill. */
  last_run_at: Date | null;
  last_run_status: string | null;
  /** The list's current failure (list-health.ts): the failed run's start, job and error; null while none. */
  last_failure_at: Date | null;
  last_failure_job: string | null;
  last_failure_error: string | null;
  last_succeeded_at: Date | null;
  last_pull_at: Date | null;
  reconcile_at: Date | null;
  reconcile_deleted: number | null;
  reconcile_undeleted: number | null;
  reconcile_details: Record<string, unknown> | null;
  running: boolean;
  pending: number;
  failed: number;
  open_conflicts: number;
  table_exists: boolean;
}

/** The latest run of a list matching `where` (over `x`), newest by id. */
const latest = (columns: string, where: string): string =>
  `(select ${columns} from ${RUNS_TABLE} x where x.list_name = l.name and ${where} order by x.id desc limit 1)`;

export const STATUS_FACTS_SQL = `
select l.name, l.tbl as "table",
       st.watermark, st.checkpoint, st.last_success_at,
       lr.started_at as last_run_at, lr.status as last_run_status,
       lf.failing_at as last_failure_at, lf.failing_job as last_failure_job, lf.failing_error as last_failure_error,
       ls.started_at as last_succeeded_at,
       lp.started_at as last_pull_at,
       rc.started_at as reconcile_at, rc.rows_deleted as reconcile_deleted, rc.rows_undeleted as reconcile_undeleted,
       rc.details as reconcile_details,
       exists (select 1 from ${RUNS_TABLE} x where x.list_name = l.name and x.status = 'running') as running,
       coalesce(ob.pending, 0)::int as pending, coalesce(ob.failed, 0)::int as failed,
       coalesce(cf.n, 0)::int as open_conflicts,
       to_regclass(format('%I.%I', ?::text, l.tbl)) is not null as table_exists
  from unnest(?::text[], ?::text[]) with ordinality as l(name, tbl, ord)
  left join ${STATE_TABLE} st on st.list_name = l.name and st.job = 'pull'
  left join lateral ${latest('started_at, status', `x.job in ('pull', 'backfill')`)} lr on true
  left join lateral ${currentFailureSql('l.name')} lf on true
  left join lateral ${latest('started_at', `x.status = 'succeeded'`)} ls on true
  left join lateral ${latest('started_at', `x.status = 'succeeded' and x.job = 'pull'`)} lp on true
  left join lateral ${latest('started_at, rows_deleted, rows_undeleted, details', `x.status = 'succeeded' and x.job = 'reconcile'`)} rc on true
  left join lateral (select count(*) filter (where o.status in ('pending', 'sending')) as pending,
                            count(*) filter (where o.status = 'failed') as failed
                       from ${OUTBOX_TABLE} o where o.list_name = l.name and o.status in ('pending', 'sending', 'failed')) ob on true
  left join lateral (select count(*) as n from ${CONFLICTS_TABLE} c where c.list_name = l.name and c.status = 'open') cf on true
 order by l.ord`;

/** Each list's facts, in the order given; `mirrorSchema` is where its mirror table would be. */
export async function readStatusFacts(
  db: Knex,
  mirrorSchema: string,
  lists: readonly { name: string; table: string }[],
): Promise<StatusFacts[]> {
  const r = await db.raw<{ rows: StatusFacts[] }>(STATUS_FACTS_SQL, [mirrorSchema, lists.map((l) => l.name), lists.map((l) => l.table)]);
  return r.rows;
}
