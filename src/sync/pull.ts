/**
 * Pull: platform -> mirror, incremental or over a fixed date range (backfill).
 *
 * - Filter `cursorField >= (watermark - lookback)` by the platform's calendar
 *   date, sorted by the immutable sortField then the ID, pages in flight
 *   through the client.
 * - Each page is upserted with its checkpoint and run counters in one
 *   transaction; a killed run resumes from the checkpoint.
 * - The watermark becomes the platform date at which the run started, written
 *   only after the last page, and only when the run saw no sign that items
 *   were deleted under it while it paged (a delete shifts later pages left, so
 *   an item could have been skipped: the next run then reads the same window).
 */
import { DateTime } from 'luxon';
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { Operator, type Filter, type Item, type ItemQuery, type Page } from '../platform/types.js';
import { PG, pgCode, coerceError } from '../errors.js';
import { platformDate } from '../platform/dates.js';
import { ensureMirrorTable, markListsyncWriter, upsertItems, type TableMapping, type UpsertResult } from '../mirror/index.js';
import { LIST_JOBS, listLockName } from './exclusive.js';
import { runJob, type ActiveRun } from './run-job.js';
import { FIELD_APPEARED_KINDS } from '../mirror/schema-change.js';
import { listTitle } from './list-title.js';
import { pendingConflictHandler } from './conflicts.js';
import { addToRun, describeRun, finishRun, zeroCounters, type RunCounters } from './runs.js';
import { completeState, readState, writeCheckpoint } from './state.js';

export { listLockName };

export type PullMode = { kind: 'incremental' } | { kind: 'backfill'; from: string; to?: string };

export interface PageProgress {
  list: string;
  runId: number;
  page: number;
  pageCount: number;
  totalCount: number;
  items: number;
  itemsSoFar: number;
  result: UpsertResult;
}

/** Called for rows the pull did not overwrite because a local change is open (write-back decides). */
export type PendingHandler = (trx: Knex.Transaction, mapping: TableMapping, skipped: UpsertResult['skippedPending']) => Promise<{ conflicts: number }>;

export interface PullDeps {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  clock?: () => Date;
  onPage?: (p: PageProgress) => void;
  onPending?: PendingHandler;
  /** Stop after the page in flight (graceful shutdown). */
  signal?: AbortSignal;
  /** Wait this long for another run of the list to finish instead of failing at once. */
  waitMs?: number;
}

export interface PullResult {
  runId: number;
  list: string;
  status: 'succeeded' | 'failed' | 'stopped';
  resumed: boolean;
  windowFrom: string | null;
  windowTo: string | null;
  watermark: string | null;
  watermarkHeld: boolean;
  counters: RunCounters;
  schemaChanges: string[];
}

interface PullCheckpoint {
  runId: number;
  mode: 'incremental' | 'backfill';
  startDate: string;
  windowFrom: string | null;
  windowTo: string | null;
  nextPage: number;
  firstTotal: number;
  lastTotal: number;
  /** Sort key of the last item that existed when the run started; items after it are new. */
  lastKeyAtStart: [string, string] | null;
  createdSeen: number;
  decreaseSeen: boolean;
}

export async function pullList(deps: PullDeps, list: ListConfig, mode: PullMode = { kind: 'incremental' }): Promise<PullResult> {
  const job = mode.kind === 'incremental' ? 'pull' : 'backfill';
  return runJob(deps, { list: list.name, job, lockName: listLockName(list.name), waitMs: deps.waitMs ?? 0, holderJobs: LIST_JOBS, recordSkipped: true }, (run) => pullLocked(deps, list, mode, job, run));
}

async function pullLocked(deps: PullDeps, list: ListConfig, mode: PullMode, job: 'pull' | 'backfill', run: ActiveRun): Promise<PullResult> {
  const { db, client, config } = deps;
  const zone = config.platform.timeZone;
  const now = deps.clock ?? (() => new Date());

  const [fields, title] = await Promise.all([client.getFields(list.appID, list.listID), listTitle(client, list, deps.logger)]);
  const mapping = await ensureMirrorTable(db, {
    schema: config.database.schema,
    list: { name: list.name, appID: list.appID, listID: list.listID, table: list.table ?? list.name },
    fields,
    idField: list.idField,
    versionField: list.versionField,
    timeZone: zone,
    columnNames: list.columnNames,
    columns: list.columns,
    reportingSchema: config.database.reportingSchema,
    history: list.history,
    ...(title !== undefined ? { title } : {}),
    runId: run.runId,
    pushDeletes: list.pushDeletes,
    logger: deps.logger,
  });
  const schemaChanges = mapping.changes ?? [];

  const state = await readState<PullCheckpoint>(db, list.name, job);
  const startDate = platformDate(now(), zone);
  let cp: PullCheckpoint;
  let resumed = false;
  const fresh = (): PullCheckpoint => {
    const windowFrom =
      mode.kind === 'backfill' ? mode.from : state.watermark ? DateTime.fromISO(state.watermark, { zone }).minus({ days: list.lookbackDays }).toISODate() : null;
    return {
      runId: 0,
      mode: mode.kind,
      startDate,
      windowFrom,
      windowTo: mode.kind === 'backfill' ? (mode.to ?? null) : null,
      nextPage: 1,
      firstTotal: -1,
      lastTotal: -1,
      lastKeyAtStart: null,
      createdSeen: 0,
      decreaseSeen: false,
    };
  };
  const prev = state.checkpoint;
  if (prev && prev.mode === mode.kind && (mode.kind === 'incremental' || (prev.windowFrom === mode.from && prev.windowTo === (mode.to ?? null)))) {
    cp = prev;
    resumed = true;
  } else {
    cp = fresh();
  }
  // A field added (or back) on the platform: existing rows have no value for it yet, and their
  // versions did not move. Re-read everything once, rewriting every row: their versions are set to
  // REFILL_VERSION, which no platform version equals, until the full read has rewritten them (a
  // run that fails before its first checkpoint finds them marked and starts the full read again).
  const table = `${mapping.schema}.${mapping.table}`;
  const fieldsAdded = (mapping.schemaChanges ?? []).some((c) => FIELD_APPEARED_KINDS.has(c.kind));
  if (mode.kind === 'incremental' && !resumed && state.watermark !== null && fieldsAdded) {
    await db.transaction(async (trx) => {
      await markListsyncWriter(trx);
      await trx.raw(`update ?? set row_version = ? where id not like 'local-%'`, [table, REFILL_VERSION]);
    });
  }
  const refill = mode.kind === 'incremental' && !resumed && state.watermark !== null && (fieldsAdded || Boolean(await db(table).where({ row_version: REFILL_VERSION }).first('id')));
  if (refill) {
    cp.windowFrom = null;
    deps.logger.warn({ list: list.name, changes: schemaChanges }, 'new field(s) on the platform: re-reading the whole list once to fill them');
  }

  const { runId, log } = run;
  await describeRun(db, runId, { windowFrom: cp.windowFrom, windowTo: cp.windowTo, resumed, details: resumed ? { resumedFromPage: cp.nextPage, resumedRun: cp.runId } : {} });
  cp.runId = runId;
  log.info({ windowFrom: cp.windowFrom, windowTo: cp.windowTo, resumed, fromPage: cp.nextPage }, `${job} started`);

  const counters = zeroCounters();
  const statsAtStart = run.statsAtStart;
  let statsMark = statsAtStart;
  const takeRequestDelta = (): Partial<RunCounters> => {
    const s = client.stats();
    const delta = { requests: s.requests - statsMark.requests, retries: s.retries - statsMark.retries };
    statsMark = s;
    return delta;
  };

  const onPending = deps.onPending ?? pendingConflictHandler(config, list);
  const query = buildQuery(list, cp);
  let itemsSoFar = 0;
  let stopped = false;
  let lastKeyProbe: Promise<void> | undefined;
  let keysBeforeProbe: [string, string][][] | undefined;
  const writes = new Set<Promise<void>>();
  let writeError: unknown;
  /** Pages committed ahead of a page still being written: the checkpoint cannot pass the gap. */
  const committed = new Set<number>();
  let frontier = cp.nextPage;
  const written = new Map<number, { page: Page; result: UpsertResult }>();
  let reported = cp.nextPage;

  const writePage = (page: Page, accounting: PullCheckpoint) =>
    withDeadlockRetry(() =>
      db.transaction(async (trx) => {
        const r = await upsertItems(trx, mapping, page.items, zone);
        let conflicts = 0;
        if (r.skippedPending.length) conflicts = (await onPending(trx, mapping, r.skippedPending)).conflicts;
        const delta: Partial<RunCounters> = {
          pages: 1,
          rows_inserted: r.inserted,
          rows_updated: r.updated,
          rows_unchanged: r.unchanged,
          rows_failed: r.failedValues,
          rows_undeleted: r.undeleted,
          rows_skipped_pending: r.skippedPending.length,
          changes_conflicted: conflicts,
          ...takeRequestDelta(),
        };
        await addToRun(trx, runId, delta);
        // Resume point: the first page not known committed, counting this one as committed
        // (it is, if this transaction commits).
        let next = frontier;
        while (next === page.index || committed.has(next)) next++;
        await writeCheckpoint(trx, list.name, job, { ...accounting, nextPage: next });
        return { r, delta };
      }),
    ).then(({ r, delta }) => {
      for (const [k, v] of Object.entries(delta)) counters[k as keyof RunCounters] += v ?? 0;
      committed.add(page.index);
      while (committed.has(frontier)) committed.delete(frontier++);
      cp.nextPage = frontier;
      return r;
    });

  try {
    // The shutdown signal is checked between pages, not passed down: the page in flight is finished and written.
    for await (const page of client.pages(list.appID, list.listID, query, { startPage: cp.nextPage, pageSize: list.pageSize })) {
      if (cp.firstTotal < 0) {
        cp.firstTotal = page.totalCount;
        // Which items are new since the start: the last item that existed then. Asked for in the
        // background (one request) so paging does not wait for it; keys seen meanwhile wait here.
        lastKeyProbe = lastKeyNow(client, list, query, page.totalCount).then((key) => {
          cp.lastKeyAtStart = key;
          for (const keys of keysBeforeProbe ?? []) cp.createdSeen += keys.filter((k) => key === null || compareKeys(k, key) > 0).length;
          keysBeforeProbe = undefined;
        });
        keysBeforeProbe = [];
      } else if (page.totalCount < cp.lastTotal) {
        cp.decreaseSeen = true;
      }
      cp.lastTotal = page.totalCount;
      if (keysBeforeProbe !== undefined) keysBeforeProbe.push(page.items.map((it) => sortKey(it, list)));
      else cp.createdSeen += countAfter(page.items, list, cp.lastKeyAtStart);
      const accounting = { ...cp };

      // Up to database.pageWriters pages are written at once, each in its own transaction with the
      // run's counters and the checkpoint: converting one page can overlap the database writing another.
      while (writes.size >= config.database.pageWriters) await Promise.race(writes);
      if (writeError !== undefined) throw writeError;
      const write = writePage(page, accounting).then(
        (result) => {
          written.set(page.index, { page, result });
          // Report pages in order, as they become contiguous.
          for (let next = written.get(reported); next; next = written.get(reported)) {
            written.delete(reported);
            reported++;
            itemsSoFar += next.page.items.length;
            if (next.result.failures.length) log.warn({ page: next.page.index, failures: next.result.failures.slice(0, 5) }, `${next.result.failedValues} value(s) did not convert; kept raw in _raw`);
            deps.onPage?.({ list: list.name, runId, page: next.page.index, pageCount: next.page.pageCount, totalCount: next.page.totalCount, items: next.page.items.length, itemsSoFar, result: next.result });
          }
        },
        (err: unknown) => {
          writeError ??= err;
        },
      );
      writes.add(write);
      void write.finally(() => writes.delete(write));
      if (deps.signal?.aborted) {
        stopped = true;
        break;
      }
    }
    await Promise.all(writes);
    if (writeError !== undefined) throw writeError;
    await lastKeyProbe;
  } catch (err) {
    await Promise.allSettled([...writes, lastKeyProbe]);
    const e = coerceError(err);
    const delta = takeRequestDelta();
    // When the database itself failed this cannot be written either; runJob reports the original error.
    await finishRun(db, runId, 'failed', { error: e.message, counters: { ...counters, requests: counters.requests + (delta.requests ?? 0), retries: counters.retries + (delta.retries ?? 0) } }).catch(() => undefined);
    log.error({ err: e, page: reported }, `${job} failed; the checkpoint is kept and the next run resumes at page ${reported}`);
    throw err;
  }

  const tail = takeRequestDelta();
  counters.requests += tail.requests ?? 0;
  counters.retries += tail.retries ?? 0;
  if (stopped) {
    await finishRun(db, runId, 'failed', { error: 'stopped by shutdown; the checkpoint is kept', counters });
    log.warn({ nextPage: cp.nextPage }, `${job} stopped by shutdown after a complete page`);
    return { runId, list: list.name, status: 'stopped', resumed, windowFrom: cp.windowFrom, windowTo: cp.windowTo, watermark: state.watermark, watermarkHeld: true, counters, schemaChanges };
  }

  // Deletes during paging shift later pages left: some items may have been skipped.
  const deletesInferred = cp.firstTotal >= 0 && cp.firstTotal + cp.createdSeen - cp.lastTotal > 0;
  const watermarkHeld = job === 'pull' && (cp.decreaseSeen || deletesInferred);
  const newWatermark = job === 'pull' && !watermarkHeld ? cp.startDate : null;
  await db.transaction(async (trx) => {
    await completeState(trx, list.name, job, newWatermark);
    if (cp.windowFrom === null && job === 'pull' && !watermarkHeld) {
      // A full read rewrote every row the platform still has: rows left marked for a refill are gone there (reconcile marks them).
      await markListsyncWriter(trx);
      await trx.raw('update ?? set row_version = null where row_version = ?', [table, REFILL_VERSION]);
    }
    await finishRun(trx, runId, 'succeeded', { counters, details: { watermark: newWatermark ?? state.watermark, watermarkHeld, firstTotal: cp.firstTotal, lastTotal: cp.lastTotal, createdDuringRun: cp.createdSeen, ...(schemaChanges.length ? { schemaChanges } : {}) } });
  });
  if (watermarkHeld) log.warn('items were deleted on the platform while paging; the watermark stays so the next run re-reads this window');
  log.info({ ...counters, watermark: newWatermark ?? state.watermark }, `${job} finished`);
  return { runId, list: list.name, status: 'succeeded', resumed, windowFrom: cp.windowFrom, windowTo: cp.windowTo, watermark: newWatermark ?? state.watermark, watermarkHeld, counters, schemaChanges };
}

/** row_version of rows waiting for a full re-read after the platform added a field. */
const REFILL_VERSION = -1;

/** Two page transactions can touch the same row (an item shifted across a page boundary): retry a deadlock. */
async function withDeadlockRetry<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (pgCode(err) !== PG.deadlockDetected || i >= attempts) throw err;
    }
  }
}

function buildQuery(list: ListConfig, cp: PullCheckpoint): ItemQuery {
  const filters: Filter[] = [];
  if (cp.windowFrom) filters.push({ Field: list.cursorField, Type: Operator.GreaterOrEqual, Value: cp.windowFrom });
  if (cp.windowTo) filters.push({ Field: list.cursorField, Type: Operator.LessOrEqual, Value: cp.windowTo });
  return {
    Filters: filters,
    Sorts: [
      { Field: list.sortField, Desc: false },
      { Field: list.idField, Desc: false },
    ],
    PageSize: list.pageSize,
  };
}

async function lastKeyNow(client: PlatformClient, list: ListConfig, query: ItemQuery, total: number): Promise<[string, string] | null> {
  if (total === 0) return null;
  const pageSize = list.pageSize;
  const lastPage = Math.ceil(total / pageSize);
  const { items } = await client.queryItems(list.appID, list.listID, { ...query, Fields: [list.sortField, list.idField], PageIndex: lastPage, PageSize: pageSize });
  const last = items[items.length - 1];
  return last ? sortKey(last, list) : null;
}

function sortKey(item: Item, list: ListConfig): [string, string] {
  return [String(item[list.sortField] ?? ''), String(item[list.idField] ?? '')];
}

function compareKeys(a: [string, string], b: [string, string]): number {
  if (a[0] !== b[0]) return compareValues(a[0], b[0]);
  return compareValues(a[1], b[1]);
}

function compareValues(a: string, b: string): number {
  if (/^-?\d+(\.\d+)?$/.test(a) && /^-?\d+(\.\d+)?$/.test(b)) {
    if (/^-?\d+$/.test(a) && /^-?\d+$/.test(b)) {
      const x = BigInt(a);
      const y = BigInt(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return Number(a) - Number(b);
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function countAfter(items: readonly Item[], list: ListConfig, key: [string, string] | null): number {
  if (!key) return items.length;
  let n = 0;
  for (const it of items) if (compareKeys(sortKey(it, list), key) > 0) n++;
  return n;
}
