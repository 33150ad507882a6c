/**
 * Reconcile: heals the mirror against the platform. Items deleted there
 * (which leaves no tombstone) get `_deleted_at` on their mirror rows; rows
 * seen again are undeleted; IDs the mirror lacks and rows whose version is
 * behind the platform's (a pull missed them, or a back-dated `Modified` hid
 * an edit from the cursor) are re-read by ID and upserted through the pull's
 * path (open local changes are left to write-back). It records how many rows
 * it healed of each kind (`details.healed`, rows_inserted/rows_updated).
 *
 * Two ways to find what to look at (the run records which, `details.mode`):
 *
 * - **by counts** (the default): counts of `Created` ranges on the platform
 *   against the mirror's live rows, the ranges that differ split down to a
 *   day or a page, and only those swept by IDs (see reconcile/counts.ts). A
 *   mirror that agrees costs one request. Versions behind, and a delete
 *   cancelled out by a create the mirror never got in the same range, are
 *   left to the full sweep.
 * - **full** (`reconcile --full`, its own weekly schedule): every ID, below.
 *
 * The full sweep, under the list's lock, pages through the whole list asking only for the
 * ID and version fields (1000 items a request, sorted by the sortField then the ID), through
 * the same throttled client as every other request, and collects the IDs in
 * temporary tables on one dedicated connection (no JS set of a million
 * strings). While the request budget paces the pages, it snapshots the
 * mirror in small primary-key steps, so that when the last page arrives the
 * candidates (live rows not seen) are known without a large join: 1M IDs take
 * about as long as 1000 requests at the account's rate.
 *
 * Before it writes anything it checks that the sweep can be trusted; a broken
 * or filtered response must never wipe the mirror:
 *
 * - it saw at least `reconcileMinSeenRatio` of the mirror's live rows;
 * - no page came back empty or short before the last page, and every item
 *   carried an ID (an empty page inside TotalCount fails the paging itself);
 * - the IDs received agree with the TotalCount the platform reported (within
 *   `totalCountTolerance`, for items created or deleted while it paged).
 *
 * A sweep that fails a check marks nothing and the run is recorded failed
 * with the reason. Otherwise the candidates are confirmed missing with ID
 * lookups (operator In, 1000 IDs a request) — an item skipped because a
 * delete shifted the pages under the sweep is found there — and one statement
 * marks the missing rows and undeletes the rows seen again. Rows with a
 * provisional `local-` id (created locally, not yet on the platform) are
 * never marked. The writes run as listsync (`listsync.writer = on`), so the
 * capture triggers ignore them. The run is recorded in `sync_runs` (job
 * `reconcile`, rows_deleted, rows_undeleted) in the same transaction.
 *
 * This file is the orchestrator; the steps live in reconcile/: the sweeps
 * (sweep.ts, collect.ts), the count search (counts.ts), the refusal
 * (refusal.ts), the ID lookups and healing (heal.ts). The decisions there are
 * pure and tested without a database (reconcile.test.ts › reconcile guard,
 * sync/reconcile-decisions.test.ts); the set-based SQL on the run's temporary
 * tables is mirror/sweep-tables.ts. Behaviour against the emulator and
 * Postgres: reconcile.test.ts, sync/reconcile-counts.test.ts,
 * sync/reconcile-heal.test.ts.
 */
import { performance } from 'node:perf_hooks';
import type { ListConfig } from '../config.js';
import { loadTableMapping, markListsyncWriter } from '../mirror/index.js';
import { mirrorTableExists, SweepTables } from '../mirror/sweep-tables.js';
import { zeroCounters, type RunCounters } from '../store/runs.js';
import { OperatorActionError, coerceError } from '../errors.js';
import { LIST_JOBS, listLockName } from './lock.js';
import { runJob, RunFailed, type ActiveRun, type RunEnd, type RunOutcome } from './run-job.js';
import { confirmCandidates, healRows } from './reconcile/heal.js';
import { sweepFailure } from './reconcile/refusal.js';
import { sweepByCounts, sweepWholeList } from './reconcile/sweep.js';
import type { ReconcileDeps, ReconcileOptions, ReconcileResult, RunParts, SweepOutcome } from './reconcile/types.js';

export {
  RECONCILE_PAGE_SIZE,
  type CountReport,
  type ReconcileDeps,
  type ReconcileOptions,
  type ReconcileResult,
} from './reconcile/types.js';
export { totalCountTolerance } from './reconcile/refusal.js';

interface PgConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

export async function reconcileList(deps: ReconcileDeps, list: ListConfig, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  return runJob(
    deps,
    {
      list: list.name,
      job: 'reconcile',
      lockName: listLockName(list.name),
      waitMs: deps.waitMs ?? 0,
      holderJobs: LIST_JOBS,
      recordSkipped: false,
    },
    (run) => reconcileLocked(deps, list, run, options.full === true ? 'full' : 'counts'),
  );
}

async function reconcileLocked(
  deps: ReconcileDeps,
  list: ListConfig,
  run: ActiveRun,
  mode: 'counts' | 'full',
): Promise<RunEnd<ReconcileResult>> {
  const { db, config } = deps;
  const { runId, log } = run;
  const schema = config.database.schema;
  const mapping = await loadTableMapping(db, schema, list.name);
  const counters = zeroCounters();
  const noteRequests = () => Object.assign(counters, run.requests());
  const base = emptyResult(runId, list.name, mode, counters);
  const { timingsMs, healed } = base;
  if (!mapping || !(await mirrorTableExists(db, mapping.qualifiedTable))) {
    const message = `no mirror table ${schema}.${mapping?.table ?? list.table ?? list.name} for list ${list.name} yet: run listsync pull first (reconcile compares the mirror with the platform)`;
    throw new OperatorActionError(message);
  }

  log.info(
    { table: `${schema}.${mapping.table}`, mode },
    mode === 'full' ? 'reconcile (full sweep) started' : 'reconcile (by counts) started',
  );
  const conn = (await db.client.acquireConnection()) as PgConnection;
  const work = new SweepTables(db, conn, mapping.qualifiedTable, mapping.listName);
  const parts: RunParts = { runId, deps, list, mapping, work, counters, timingsMs, phaseEnd: phaseTimer() };
  try {
    await work.create();

    // ---- sweep: every ID, or the IDs of the ranges whose counts differ ----
    let outcome: SweepOutcome;
    try {
      outcome = mode === 'full' ? await sweepWholeList(parts) : await sweepByCounts(parts);
    } catch (err) {
      noteRequests();
      const failure = sweepFailure(coerceError(err).message, deps.signal?.aborted === true);
      if (failure.status === 'stopped') {
        log.warn(failure.message);
        const result = { ...base, status: 'stopped', message: failure.message, pages: counters.pages } as const;
        return { outcome: { status: 'failed', error: failure.message, counters, details: { mode } }, result };
      }
      const line = 'reconcile failed; nothing was marked';
      throw new RunFailed(new Error(failure.message, { cause: err }), { counters, details: { mode }, line });
    }
    noteRequests();
    const details = { mode, ...outcome.details };
    const { seen, live, totalCount, counts } = outcome;
    Object.assign(base, { seen, live, totalCount, pages: counters.pages, counts });
    if (outcome.refusal) {
      log.error(details, outcome.refusal);
      const result = { ...base, status: 'refused', message: outcome.refusal } as const;
      return { outcome: { status: 'failed', error: outcome.refusal, counters, details }, result };
    }

    // ---- confirm the candidates, heal, then mark in one statement ---------
    const confirmedPresent = await confirmCandidates(deps, list, work);
    timingsMs.confirm = parts.phaseEnd();
    Object.assign(healed, await healRows(deps, list, mapping, work, counters));
    timingsMs.heal = parts.phaseEnd();
    noteRequests();
    if (deps.signal?.aborted) {
      const message = 'stopped by shutdown before marking; nothing was marked';
      return {
        outcome: { status: 'failed', error: message, counters, details },
        result: { ...base, status: 'stopped', message, confirmedPresent },
      };
    }
    const settled = { status: 'succeeded', counters, details: { ...details, confirmedPresent, healed } } as const;
    const { deleted, undeleted } = await markAndFinish(parts, run, conn, settled);
    timingsMs.mark = parts.phaseEnd();
    const pullMissed = healed.missing + healed.behind > 0;
    (pullMissed ? log.warn.bind(log) : log.info.bind(log))(
      { ...details, confirmedPresent, deleted, undeleted, healed, requests: counters.requests, retries: counters.retries, timingsMs },
      finishedLine(pullMissed),
    );
    return { outcome: settled, result: { ...base, status: 'succeeded', message: null, confirmedPresent, deleted, undeleted } };
  } finally {
    await work.drop().catch(() => undefined);
    await db.client.releaseConnection(conn);
  }
}

/** The one statement that marks and undeletes, and the run settled succeeded, in one transaction on the run's connection. */
async function markAndFinish(
  parts: RunParts,
  run: ActiveRun,
  conn: PgConnection,
  outcome: RunOutcome & { status: 'succeeded' },
): Promise<{ deleted: number; undeleted: number }> {
  const { deps, mapping, work, counters } = parts;
  return deps.db.transaction(
    async (trx) => {
      await markListsyncWriter(trx);
      const r = await work.mark(trx, mapping.history ? mapping : undefined);
      counters.rows_deleted = r.deleted;
      counters.rows_undeleted = r.undeleted;
      await run.settle(trx, outcome);
      return r;
    },
    { connection: conn },
  );
}

/** Marking deletes is reconcile's job (info); rows missing or behind mean a pull missed something (warn). */
function finishedLine(pullMissed: boolean): string {
  return pullMissed
    ? 'reconcile finished and healed rows the pulls had not brought in line: worth a look (cursor field, clock skew, back-dated edits)'
    : 'reconcile finished';
}

/** Milliseconds since the last call (or since it was made): the phase that just ended. */
function phaseTimer(): () => number {
  let phaseStart = performance.now();
  return () => {
    const now = performance.now();
    const ms = Math.round(now - phaseStart);
    phaseStart = now;
    return ms;
  };
}

/** A result with nothing seen or done yet; the steps fill it in. */
function emptyResult(
  runId: number,
  list: string,
  mode: 'counts' | 'full',
  counters: RunCounters,
): Omit<ReconcileResult, 'status' | 'message'> {
  return {
    runId,
    list,
    mode,
    seen: 0,
    live: 0,
    totalCount: 0,
    pages: 0,
    confirmedPresent: 0,
    deleted: 0,
    undeleted: 0,
    healed: { missing: 0, behind: 0, keptLocal: 0 },
    counts: null,
    counters,
    timingsMs: { sweep: 0, candidates: 0, confirm: 0, heal: 0, mark: 0 },
  };
}
