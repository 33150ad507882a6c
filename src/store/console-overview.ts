/**
 * The console's overview: one row per configured list, read in one statement
 * from the run history, sync state, outbox, conflicts, realtime inbox and
 * PostgreSQL's table statistics (no count(*) over a mirror table).
 *
 * Invariants:
 * - one query for a whole page, whatever the number of lists; the page is cut
 *   in SQL (degraded lists first, then in config order, unless another column
 *   is chosen), after the filter (name, degraded or healthy), with the totals
 *   (bench/console.bench.ts: 500 lists under 300 ms);
 * - a list is degraded for the reasons in `problems`, in words; a failed job
 *   keeps it degraded until a run of the same job succeeds (src/store/list-health.ts)
 *   (test/console/console-browser.test.ts › "the overview says what each list is doing").
 */
import type { Knex } from '../db.js';
import { CONFLICTS_TABLE } from './conflicts.js';
import { currentFailureSql } from './list-health.js';
import { OUTBOX_TABLE } from './outbox.js';
import { REALTIME_STATS_TABLE } from './realtime-stats.js';
import { REGISTRY_TABLE } from './registry.js';
import { RUNS_TABLE } from './runs.js';
import { INBOX_TABLE, SUBSCRIPTIONS_TABLE } from './webhook-tables.js';

export interface OverviewInput {
  /** The configured lists, in config order: name and mirror table. */
  lists: readonly { name: string; table: string }[];
  mirrorSchema: string;
  maxLagMinutes: number;
  realtimeStaleAfterSeconds: number;
  offset: number;
  limit: number;
  /** Only lists whose name holds this text (any case); '' for every list. */
  name?: string;
  /** Only degraded or only healthy lists. */
  state?: 'degraded' | 'healthy';
  /** The column to sort by (default: degraded first, then config order) and its direction. */
  sort?: { key: OverviewSortKey; dir: 'asc' | 'desc' };
  /** Each list's pull schedule in the same order as `lists` ('' for none): the schedule column sorts by it. */
  schedules?: readonly string[];
}

/** The columns the overview sorts by, and the SQL each sorts on (fixed text: never from the request). */
export const OVERVIEW_SORTS = {
  name: 'name',
  health: 'cardinality(problems)',
  fresh: 'fresh_seconds',
  last_run: 'last_started_at',
  rows: 'rows',
  changes: 'pending + failed',
  conflicts: 'conflicts',
  realtime: 'waiting',
  schedule: "nullif(sched, '')",
} as const;
export type OverviewSortKey = keyof typeof OVERVIEW_SORTS;

/** The ORDER BY of a page: the chosen column (empty values last), then config order. */
function orderBy(sort: OverviewInput['sort']): string {
  if (!sort) return 'cardinality(problems) > 0 desc, ord';
  return `${OVERVIEW_SORTS[sort.key]} ${sort.dir === 'desc' ? 'desc' : 'asc'} nulls last, ord`;
}

export interface OverviewRow {
  name: string;
  last_job: string | null;
  last_status: string | null;
  last_started_at: Date | null;
  last_finished_at: Date | null;
  /** Start of the last successful pull or backfill: the mirror matched the platform as of then. */
  last_pull_at: Date | null;
  fresh_seconds: number | null;
  last_error: string | null;
  pending: number;
  failed: number;
  conflicts: number;
  /** PostgreSQL's count of live rows in the mirror table (its statistics; null before the table exists or is counted). */
  rows: number | null;
  subscriptions: number;
  waiting: number;
  oldest_waiting_seconds: number | null;
  last_applied_at: Date | null;
  /** Events waiting whose re-read failed at least once, the most attempts one has had, and the newest error. */
  failing_events: number;
  max_attempts: number;
  realtime_error: string | null;
  /** The list's title on the platform (the registry's; null until a pull read it). */
  title: string | null;
  problems: string[];
  total: number;
  degraded_total: number;
}

const overviewSql = (order: string): string => `
with l as (
  select * from unnest(?::text[], ?::text[], ?::text[]) with ordinality as l(name, tbl, sched, ord)
), r as (
  select l.name, l.tbl, l.sched, l.ord,
         lr.job as last_job, lr.status as last_status, lr.started_at as last_started_at, lr.finished_at as last_finished_at,
         ok.at as last_pull_at,
         extract(epoch from now() - ok.at)::float8 as fresh_seconds,
         lo.failing_job, lo.failing_error as last_error,
         coalesce(ob.pending, 0)::int as pending, coalesce(ob.failed, 0)::int as failed,
         coalesce(cf.n, 0)::int as conflicts,
         coalesce(sb.n, 0)::int as subscriptions,
         coalesce(ev.waiting, 0)::int as waiting,
         ev.oldest_seconds as oldest_waiting_seconds,
         coalesce(ev.failing, 0)::int as failing_events, coalesce(ev.max_attempts, 0)::int as max_attempts, ev.realtime_error,
         rs.last_applied_at, li.title
    from l
    -- The last run that did something (a success without a platform request, such as a push with nothing
    -- to send, is passed over), and the list's current failure (list-health.ts).
    left join lateral (select job, status, started_at, finished_at from ${RUNS_TABLE} x
                        where x.list_name = l.name and not (x.status = 'succeeded' and x.requests = 0)
                        order by x.id desc limit 1) lr on true
    left join lateral ${currentFailureSql('l.name')} lo on true
    left join lateral (select greatest(
                         (select max(started_at) from ${RUNS_TABLE} x where x.list_name = l.name and x.job = 'pull' and x.status = 'succeeded'),
                         (select max(started_at) from ${RUNS_TABLE} x where x.list_name = l.name and x.job = 'backfill' and x.status = 'succeeded')
                       ) as at) ok on true
    left join lateral (select count(*) filter (where status in ('pending', 'sending')) as pending,
                              count(*) filter (where status = 'failed') as failed
                         from ${OUTBOX_TABLE} o where o.list_name = l.name and o.status in ('pending', 'sending', 'failed')) ob on true
    left join lateral (select count(*) as n from ${CONFLICTS_TABLE} c where c.list_name = l.name and c.status = 'open') cf on true
    left join (select list_name, count(*) as n from ${SUBSCRIPTIONS_TABLE} where list_name is not null group by 1) sb on sb.list_name = l.name
    -- Events waiting, and those whose re-read failed: how many, the most attempts one has had, the newest error.
    left join (select s.list_name, count(*) as waiting, extract(epoch from now() - min(i.received_at))::float8 as oldest_seconds,
                      count(*) filter (where i.attempts > 0) as failing, max(i.attempts) as max_attempts,
                      (array_agg(i.last_error order by i.last_attempt_at desc nulls last) filter (where i.last_error is not null))[1] as realtime_error
                 from ${INBOX_TABLE} i join ${SUBSCRIPTIONS_TABLE} s on s.id = i.subscription_id
                where s.list_name is not null and i.processed_at is null group by 1) ev on ev.list_name = l.name
    left join ${REALTIME_STATS_TABLE} rs on rs.list_name = l.name
    left join ${REGISTRY_TABLE} li on li.name = l.name
), p as (
  select r.*, array_remove(array[
           case when failing_job is not null then 'last ' || failing_job || ' failed' end,
           case when last_pull_at is null and last_status is distinct from 'running' then 'never pulled' end,
           case when fresh_seconds > ? * 60 then 'stale' end,
           case when failed > 0 then 'changes failed' end,
           case when oldest_waiting_seconds > ? then 'events waiting' end,
           case when conflicts > 0 then 'conflicts open' end
         ], null) as problems,
         -- The mirror tables' row counts from PostgreSQL's statistics (the rows column sorts by them).
         -- A table the statistics have not counted yet (nothing reported, never analyzed) has no figure, not 0.
         case when st.n_live_tup = 0 and st.n_tup_ins + st.n_tup_upd + st.n_tup_del = 0
                   and st.last_analyze is null and st.last_autoanalyze is null then null
              else st.n_live_tup end::bigint as rows
    from r
    left join pg_catalog.pg_stat_user_tables st on st.schemaname = ? and st.relname = r.tbl
), f as (
  -- The filter: a name holding the text (any case), degraded or healthy lists only.
  select * from p
   where strpos(lower(name), lower(?)) > 0
     and (?::text is null or (cardinality(problems) > 0) = (?::text = 'degraded'))
), page as (
  select f.*, count(*) over () as total, count(*) filter (where cardinality(problems) > 0) over () as degraded_total
    from f
   order by ${order}
   limit ? offset ?
)
select * from page order by ${order}`;

/** The statement of the default page (degraded first, then config order), as the benchmark runs it. */
export const OVERVIEW_SQL = overviewSql(orderBy(undefined));

/** A page of the overview, degraded lists first. */
export async function overviewRows(db: Knex, input: OverviewInput): Promise<OverviewRow[]> {
  const r = await db.raw<{ rows: (Omit<OverviewRow, 'rows' | 'total' | 'degraded_total'> & Record<string, unknown>)[] }>(
    overviewSql(orderBy(input.sort)),
    [
      input.lists.map((l) => l.name),
      input.lists.map((l) => l.table),
      input.schedules ? [...input.schedules] : input.lists.map(() => ''),
      input.maxLagMinutes,
      input.realtimeStaleAfterSeconds,
      input.mirrorSchema,
      input.name ?? '',
      input.state ?? null,
      input.state ?? null,
      input.limit,
      input.offset,
    ],
  );
  return r.rows.map((row) => ({
    ...row,
    rows: row.rows === null ? null : Number(row.rows),
    total: Number(row.total),
    degraded_total: Number(row.degraded_total),
  }));
}
