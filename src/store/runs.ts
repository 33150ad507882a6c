/**
 * Run history (`listsync.sync_runs`): a row when a run starts, counters as
 * pages land (in the page's own transaction), and the outcome at the end.
 */
import { hostname } from 'node:os';
import type { Knex } from '../db.js';
import { closestText, storableJson } from '../storable.js';
import { RUN_EVENTS_TABLE, traceRun } from './run-events.js';
import { SCHEMA_CHANGES_TABLE } from './schema-changes.js';
import { STATE_TABLE } from './state.js';

export const RUNS_TABLE = 'listsync.sync_runs';
/** What pruned runs added up to, per list, job and status: /metrics' totals count them on. */
export const PRUNED_TOTALS_TABLE = 'listsync.pruned_run_totals';

export type Job = 'pull' | 'backfill' | 'push' | 'reconcile' | 'users' | 'directory';
/** `interrupted`: stopped by SIGINT/SIGTERM after the work in flight was finished or rolled back; the next run carries on. */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped' | 'interrupted';

export interface RunCounters {
  pages: number;
  requests: number;
  retries: number;
  rows_inserted: number;
  rows_updated: number;
  rows_unchanged: number;
  rows_deleted: number;
  rows_undeleted: number;
  rows_failed: number;
  rows_skipped_pending: number;
  /** Items that omitted a mirrored field (its column kept what it held). */
  rows_missing_keys: number;
  /** Items with text PostgreSQL cannot hold (typed columns got the closest text, `_raw` the exact value). */
  rows_unstorable: number;
  changes_applied: number;
  changes_conflicted: number;
  changes_failed: number;
}

export const zeroCounters = (): RunCounters => ({
  pages: 0,
  requests: 0,
  retries: 0,
  rows_inserted: 0,
  rows_updated: 0,
  rows_unchanged: 0,
  rows_deleted: 0,
  rows_undeleted: 0,
  rows_failed: 0,
  rows_skipped_pending: 0,
  rows_missing_keys: 0,
  rows_unstorable: 0,
  changes_applied: 0,
  changes_conflicted: 0,
  changes_failed: 0,
});

export const HOLDER = `${hostname()}:${process.pid}`;

export async function startRun(
  db: Knex,
  listName: string,
  job: Job,
  extra: {
    windowFrom?: string | null;
    windowTo?: string | null;
    resumed?: boolean;
    details?: object;
    /** The engine's job the run is for, and which attempt at it (0 the first). */
    engineJob?: { id: string; attempt: number };
  } = {},
): Promise<number> {
  const [row] = (await db(RUNS_TABLE)
    .insert({
      list_name: listName,
      job,
      status: 'running',
      holder: HOLDER,
      job_id: extra.engineJob?.id ?? null,
      attempt: extra.engineJob?.attempt ?? null,
      window_from: extra.windowFrom ?? null,
      window_to: extra.windowTo ?? null,
      resumed: extra.resumed ?? false,
      details: storableJson(extra.details ?? {}),
    })
    .returning('id')) as { id: number }[];
  return row!.id;
}

/** Sets what a run found out after it opened: its window, whether it resumed, details. */
export async function describeRun(
  db: Knex,
  runId: number,
  extra: { windowFrom?: string | null; windowTo?: string | null; resumed?: boolean; details?: object },
): Promise<void> {
  traceRun(runId, 'plan', {
    windowFrom: extra.windowFrom ?? null,
    windowTo: extra.windowTo ?? null,
    resumed: extra.resumed ?? false,
    ...extra.details,
  });
  await db(RUNS_TABLE)
    .where({ id: runId })
    .update({
      window_from: extra.windowFrom ?? null,
      window_to: extra.windowTo ?? null,
      resumed: extra.resumed ?? false,
      details: storableJson(extra.details ?? {}),
    });
}

/** True while the run has no outcome recorded. */
export async function isRunOpen(db: Knex, runId: number): Promise<boolean> {
  return Boolean(await db(RUNS_TABLE).where({ id: runId, status: 'running' }).first('id'));
}

/** Adds to a run's counters (use the page's transaction). */
export async function addToRun(db: Knex, runId: number, delta: Partial<RunCounters>): Promise<void> {
  const entries = Object.entries(delta).filter(([, v]) => typeof v === 'number' && v !== 0);
  if (entries.length === 0) return;
  // Noted as the page's counters are added; a page whose transaction then rolls back ends the run failed, after it in the trace.
  traceRun(runId, delta.pages ? 'page' : 'rows', Object.fromEntries(entries));
  const update: Record<string, Knex.Raw> = {};
  for (const [k, v] of entries) update[k] = db.raw('?? + ?', [k, v]);
  await db(RUNS_TABLE).where({ id: runId }).update(update);
}

export async function finishRun(
  db: Knex,
  runId: number,
  status: Exclude<RunStatus, 'running'>,
  extra: { error?: string; details?: object; counters?: Partial<RunCounters> } = {},
): Promise<void> {
  // An error may quote the platform's text: NUL and lone surrogates read U+FFFD (PostgreSQL text cannot hold them).
  const update: Record<string, unknown> = {
    status,
    finished_at: db.fn.now(),
    error: extra.error === undefined ? null : closestText(extra.error),
  };
  if (extra.details) update.details = db.raw(`details || ?::jsonb`, [storableJson(extra.details)]);
  for (const [k, v] of Object.entries(extra.counters ?? {})) update[k] = v;
  await db(RUNS_TABLE).where({ id: runId }).update(update);
}

/**
 * A run serve's queue accounts for after the fact: a fire skipped before it ran (coalesced, dropped at
 * shutdown) or one that failed before it could open its row (the database was unreachable). Written
 * as one closed row, with the time it was fired.
 */
export async function recordClosedRun(
  db: Knex,
  run: { list: string; job: Job; status: 'failed' | 'skipped'; error: string; firedAt: Date },
): Promise<number> {
  const [row] = (await db(RUNS_TABLE)
    .insert({
      list_name: run.list,
      job: run.job,
      status: run.status,
      holder: HOLDER,
      started_at: run.firedAt,
      finished_at: db.fn.now(),
      error: closestText(run.error),
    })
    .returning('id')) as { id: number }[];
  return row!.id;
}

/** Closes a run still 'running' with this outcome (a run that could not record its own); false when it had one. */
export async function closeOpenRun(db: Knex, runId: number, status: 'failed' | 'interrupted', error: string): Promise<boolean> {
  const n = await db(RUNS_TABLE)
    .where({ id: runId, status: 'running' })
    .update({ status, finished_at: db.fn.now(), error: closestText(error) });
  return n > 0;
}

/** Runs left 'running' by a process that died are closed as failed (called at start by the next run). */
/** The worker (host:pid) of each engine job's latest run, by job id. */
export async function workersOfJobs(db: Knex, jobIds: readonly string[]): Promise<Map<string, string>> {
  if (jobIds.length === 0) return new Map();
  const rows = (await db(RUNS_TABLE)
    .distinctOn('job_id')
    .whereIn('job_id', [...jobIds])
    .orderBy([{ column: 'job_id' }, { column: 'id', order: 'desc' }])
    .select('job_id', 'holder')) as { job_id: string; holder: string }[];
  return new Map(rows.map((r) => [r.job_id, r.holder]));
}

export async function closeAbandonedRuns(db: Knex, listName: string, jobs: readonly Job[]): Promise<number> {
  return db(RUNS_TABLE)
    .where({ list_name: listName, status: 'running' })
    .whereIn('job', [...jobs])
    .update({
      status: 'failed',
      finished_at: db.fn.now(),
      error: 'abandoned: the process running it stopped before it finished (its checkpoint is kept)',
    });
}

export async function describeRunning(db: Knex, listName: string, jobs: readonly Job[]): Promise<string | undefined> {
  const row = (await db(RUNS_TABLE)
    .where({ list_name: listName, status: 'running' })
    .whereIn('job', [...jobs])
    .orderBy('id', 'desc')
    .first()) as { id: number; job: string; holder: string; started_at: Date } | undefined;
  return row ? `${row.job} run ${row.id} by ${row.holder} since ${row.started_at.toISOString()}` : undefined;
}

/** A run's row: what `status` reports of it. */
export interface RunRow extends RunCounters {
  id: number;
  list_name: string;
  job: Job;
  status: RunStatus;
  holder: string;
  started_at: Date;
  finished_at: Date | null;
  error: string | null;
  details: Record<string, unknown> | null;
}

/** A list's newest run, optionally of some jobs or with one status. */
export async function latestRun(
  db: Knex,
  listName: string,
  filter: { jobs?: readonly Job[]; status?: RunStatus } = {},
): Promise<RunRow | undefined> {
  const q = db(RUNS_TABLE).where({ list_name: listName });
  if (filter.status) void q.where({ status: filter.status });
  if (filter.jobs) void q.whereIn('job', [...filter.jobs]);
  return (await q.orderBy('id', 'desc').first()) as RunRow | undefined;
}

/** For the demo's walkthrough: how many runs are recorded (a scalar subquery). */
export const COUNT_RUNS_SQL = `select count(*) from ${RUNS_TABLE}`;

// What `/metrics` reads from the run history: per list and job, totals and the latest outcomes.

const CHANGED_COLUMNS = ['rows_inserted', 'rows_updated', 'rows_deleted', 'rows_undeleted'];
/** The rows a run changed, as an SQL sum of its columns (of the run named `alias` when given). */
const changedRows = (alias?: string): string => CHANGED_COLUMNS.map((c) => (alias ? `${alias}.${c}` : c)).join(' + ');
const CHANGED_ROWS = changedRows();
const HEALED_MISSING = "coalesce((details->'healed'->>'missing')::bigint, 0)";
const HEALED_BEHIND = "coalesce((details->'healed'->>'behind')::bigint, 0)";

/** The counters /metrics sums per list, as their column and the name it exports them under. */
const TOTALLED_COUNTERS = [
  ['rows_inserted', 'inserted'],
  ['rows_updated', 'updated'],
  ['rows_unchanged', 'unchanged'],
  ['rows_deleted', 'deleted'],
  ['rows_undeleted', 'undeleted'],
  ['rows_failed', 'failed'],
  ['rows_missing_keys', 'missing_keys'],
  ['rows_unstorable', 'unstorable'],
  ['changes_applied', 'applied'],
  ['changes_conflicted', 'conflicted'],
  ['changes_failed', 'changes_failed'],
] as const;
const TOTALLED_COLUMNS = TOTALLED_COUNTERS.map(([column]) => column);

/** Per list and job, the newest successful run: its pages, requests and rows changed. */
export async function lastSucceededRuns(
  db: Knex,
): Promise<{ list_name: string; job: string; pages: number; requests: number; changed: string | number }[]> {
  const last = (await db.raw(
    `select distinct on (list_name, job) list_name, job, pages, requests, ${CHANGED_ROWS} as changed
       from ${RUNS_TABLE} where status = 'succeeded'
      order by list_name, job, started_at desc, id desc`,
  )) as { rows: { list_name: string; job: string; pages: number; requests: number; changed: string | number }[] };
  return last.rows;
}

/** Per list and job, the failed runs since the last successful one. */
export async function failureStreaks(db: Knex): Promise<{ list_name: string; job: string; failed: string | number }[]> {
  const streaks = (await db.raw(
    `select r.list_name, r.job, count(*) filter (where r.status = 'failed' and (ok.at is null or r.started_at > ok.at)) as failed
       from ${RUNS_TABLE} r
       left join (select list_name, job, max(started_at) as at from ${RUNS_TABLE} where status = 'succeeded' group by 1, 2) ok using (list_name, job)
      group by 1, 2`,
  )) as { rows: { list_name: string; job: string; failed: string | number }[] };
  return streaks.rows;
}

/** Per list, when the last successful pull that changed rows started (epoch seconds). */
export async function lastChangingPulls(db: Knex): Promise<{ list_name: string; at: number }[]> {
  const changes = (await db.raw(
    `select list_name, extract(epoch from max(started_at))::float8 as at
       from ${RUNS_TABLE} where job = 'pull' and status = 'succeeded' and ${CHANGED_ROWS} > 0 group by 1`,
  )) as { rows: { list_name: string; at: number }[] };
  return changes.rows;
}

/** Per list, the rows reconcile healed by kind: marked deleted, brought back, missing, behind (pruned runs included). */
export async function reconcileHeals(
  db: Knex,
): Promise<
  { list_name: string; deleted: string | number; undeleted: string | number; missing: string | number; behind: string | number }[]
> {
  const heals = (await db.raw(
    `select list_name, sum(rows_deleted)::bigint as deleted, sum(rows_undeleted)::bigint as undeleted,
            sum(missing)::bigint as missing, sum(behind)::bigint as behind
       from (select list_name, rows_deleted, rows_undeleted, ${HEALED_MISSING} as missing, ${HEALED_BEHIND} as behind
               from ${RUNS_TABLE} where job = 'reconcile'
             union all select list_name, rows_deleted, rows_undeleted, healed_missing, healed_behind
               from ${PRUNED_TOTALS_TABLE} where job = 'reconcile') every_run
      group by 1`,
  )) as {
    rows: { list_name: string; deleted: string | number; undeleted: string | number; missing: string | number; behind: string | number }[];
  };
  return heals.rows;
}

/** Per list, the counters summed over every run, the pruned ones included. */
export async function counterTotals(db: Knex): Promise<Record<string, string | number | null>[]> {
  const sums = TOTALLED_COUNTERS.map(([column, name]) => `sum(${column}) as ${name}`).join(', ');
  const columns = TOTALLED_COLUMNS.join(', ');
  const totals = (await db.raw(
    `select list_name, ${sums}
       from (select list_name, ${columns} from ${RUNS_TABLE}
             union all select list_name, ${columns} from ${PRUNED_TOTALS_TABLE}) every_run
      group by list_name`,
  )) as { rows: Record<string, string | number | null>[] };
  return totals.rows;
}

/** Runs counted by list, job and status, the pruned ones included. */
export async function runCounts(db: Knex): Promise<{ list_name: string; job: string; status: string; n: string | number }[]> {
  const counts = (await db.raw(
    `select list_name, job, status, sum(n)::bigint as n
       from (select list_name, job, status, count(*) as n from ${RUNS_TABLE} group by 1, 2, 3
             union all select list_name, job, status, runs from ${PRUNED_TOTALS_TABLE}) every_run
      group by 1, 2, 3`,
  )) as { rows: { list_name: string; job: string; status: string; n: string | number }[] };
  return counts.rows;
}

/** Runs that finished after `cursor` (Postgres text form of a timestamptz), oldest first: their duration and their own cursor. */
export async function runsFinishedAfter(
  db: Knex,
  cursor: string,
  limit: number,
): Promise<{ job: string; status: string; seconds: number; cursor: string }[]> {
  return (await db(RUNS_TABLE)
    .whereNotNull('finished_at')
    .where('finished_at', '>', db.raw('?::timestamptz', [cursor]))
    .orderBy('finished_at')
    .limit(limit)
    .select(
      'job',
      'status',
      db.raw('extract(epoch from finished_at - started_at)::float8 as seconds'),
      db.raw('finished_at::text as cursor'),
    )) as {
    job: string;
    status: string;
    seconds: number;
    cursor: string;
  }[];
}

// Keeping the history to serve.runHistoryDays (src/serve/run-retention.ts).

/** Rows one prune statement deletes at most: short statements, short locks, while runs keep writing. */
export const PRUNE_BATCH = 10_000;

/**
 * A run the history may drop: finished more than `days` ago and not the newest of its status for its
 * list and job (status, /metrics and the console read the last success and the last failure however
 * old), nor the newest such run that changed rows (/metrics' last pull with changes), nor named by a
 * schema change or a checkpoint (they point at the run that wrote them). "Newest" holds both by id
 * and by start time: a fire recorded after the fact started before runs opened since.
 */
const PRUNABLE_RUNS_SQL = `
  select r.id from ${RUNS_TABLE} r
   where r.status <> 'running' and r.finished_at < now() - make_interval(days => ?)
     and exists (select 1 from ${RUNS_TABLE} n
                  where n.list_name = r.list_name and n.job = r.job and n.status = r.status
                    and n.id > r.id and n.started_at >= r.started_at
                    and (${changedRows('r')} = 0 or ${changedRows('n')} > 0))
     and not exists (select 1 from ${SCHEMA_CHANGES_TABLE} c where c.run_id = r.id)
     and not exists (select 1 from ${STATE_TABLE} s where s.checkpoint->>'runId' = r.id::text)
   limit ?`;

/** What a pruned run leaves in PRUNED_TOTALS_TABLE. */
const CARRIED = [...TOTALLED_COLUMNS, 'healed_missing', 'healed_behind'];

/**
 * One batch: deletes prunable runs and adds what they counted to PRUNED_TOTALS_TABLE in the same
 * statement, so /metrics' totals never go down (Prometheus would read a reset), and their traces
 * (run-events.ts) with them; returns how many went.
 */
async function pruneRunBatch(db: Knex, days: number, batch: number): Promise<number> {
  const counters = TOTALLED_COLUMNS.join(', ');
  const result = (await db.raw(
    `with gone as (
       delete from ${RUNS_TABLE} where id in (${PRUNABLE_RUNS_SQL})
       returning id, list_name, job, status, ${counters}, ${HEALED_MISSING} as healed_missing, ${HEALED_BEHIND} as healed_behind
     ), traces as (
       delete from ${RUN_EVENTS_TABLE} where run_id in (select id from gone)
     ), carried as (
       insert into ${PRUNED_TOTALS_TABLE} as t (list_name, job, status, runs, ${CARRIED.join(', ')})
       select list_name, job, status, count(*), ${CARRIED.map((c) => `sum(${c})`).join(', ')} from gone group by 1, 2, 3
       on conflict (list_name, job, status) do update
         set runs = t.runs + excluded.runs, ${CARRIED.map((c) => `${c} = t.${c} + excluded.${c}`).join(', ')}
     )
     select count(*)::int as deleted from gone`,
    [days, batch],
  )) as { rows: { deleted: number }[] };
  return result.rows[0]!.deleted;
}

/**
 * Drops runs that ended more than `days` ago (see PRUNABLE_RUNS_SQL for the ones kept), a batch per
 * statement until a batch comes back short, or `stopped()` says to leave the rest for the next time.
 */
export async function pruneRuns(
  db: Knex,
  days: number,
  options: { batch?: number; stopped?: () => boolean } = {},
): Promise<{ deleted: number; batches: number }> {
  const batch = options.batch ?? PRUNE_BATCH;
  let deleted = 0;
  let batches = 0;
  for (;;) {
    const n = await pruneRunBatch(db, days, batch);
    deleted += n;
    batches += 1;
    if (n < batch || options.stopped?.()) return { deleted, batches };
  }
}
