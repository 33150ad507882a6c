/**
 * Pull: platform -> mirror, incremental or over a fixed date range (backfill).
 *
 * The cursor. The platform filters the cursor field (`Modified`) by calendar
 * date only (operator 2, `YYYY-MM-DD` in its zone), so the date filter alone
 * re-reads everything touched since the watermark's day. A pull remembers,
 * besides that date, the highest modification time its last successful run
 * can vouch for (`sync_state.high_water`, seconds, the platform's clock), and
 * reads newest first: the date filter from `high_water − overlapMinutes`,
 * sorted by the cursor field then the ID, descending, stopping at the first
 * page that reaches items modified before that time. With 50 edits on a list
 * of 30,000, that is one page.
 *
 * Why newest first holds up: an item created or edited while the run pages
 * moves to the front, which shifts the unread items back — an item can come
 * twice, never be skipped — and its new time is later than the run's mark,
 * so the next run reads it. Only a delete shifts unread items forward onto a
 * page already read; the delete watch sees TotalCount drop below the first
 * page's and the run holds its marks (the next run reads the same window).
 * The mark a run records is the newest modification time when it started
 * (the first item of a newest-first read; asked before a by-created read),
 * never the newest item seen, which an item edited mid-run can undercut.
 *
 * Failure modes, and what covers them:
 * - the platform's clock is behind or jumps, or its query index lags a
 *   write: items stamped up to `overlapMinutes` before the mark are re-read;
 *   beyond that, `reconcile` compares versions and heals;
 * - a back-dated `Modified` (a late write): reconcile heals;
 * - the cursor field cannot be sorted on, its values do not parse, or the
 *   newest-first order does not hold on a page: the run falls back to the
 *   date window (`watermark − lookbackDays`) sorted by the immutable sort
 *   field, says so in the log and `sync_runs.details.fallback`;
 * - an ambiguous local time in a DST fall-back hour compares up to an hour
 *   off: keep `overlapMinutes` or reconcile in mind in zones with DST.
 *
 * A first pull, a refill after a new field and a backfill read by-created:
 * the immutable sort field then the ID, ascending, to the end. Items created
 * meanwhile land after the last item that existed at the start (asked before
 * paging and kept in the checkpoint), so only deletes can shift pages.
 *
 * Every page is checked for completeness before it is believed (see
 * pull/page-reader.ts); each page is upserted with its checkpoint and the
 * run's counters in one transaction, and a killed or failed run resumes from
 * the checkpoint with the marks unmoved.
 *
 * The steps: prepare the table, plan the window (pull/plan.ts), read the
 * checked pages (pull/page-reader.ts) into the ordered writer
 * (pull/page-writer.ts) under the delete watch (pull/delete-watch.ts), then
 * decide the marks (pull/watermark.ts) and record the outcome.
 */
import { pinnedNames, pinnedTypes, type ListConfig } from '../config.js';
import type { PlatformClient } from '../platform/client.js';
import { ValidationError } from '../platform/errors.js';
import type { FieldMeta, Item, ItemQuery } from '../platform/types.js';
import { coerceError } from '../errors.js';
import { platformDate } from '../platform/dates.js';
import { ensureMirrorTable, markListsyncWriter, readRegistry, type TableMapping, type UpsertResult } from '../mirror/index.js';
import { FIELD_APPEARED_KINDS } from '../mirror/schema-change.js';
import { listTitle } from './list-title.js';
import { LIST_JOBS, listLockName } from './exclusive.js';
import { runJob, type ActiveRun, type JobDeps } from './run-job.js';
import { pendingConflictHandler } from './conflicts.js';
import { describeRun, finishRun, zeroCounters, type RunCounters } from '../store/runs.js';
import { completeState, readState, writeCheckpoint, type SyncState } from '../store/state.js';
import { buildQuery, cursorMillis, cursorText, fallbackPlan, planWindow, type PlanInput, type PullPlan } from './pull/plan.js';
import { PageChecks, readPages, sortKey, type CheckedPage } from './pull/page-reader.js';
import { PageWriter, type PendingHandler } from './pull/page-writer.js';
import { newWatch, observePage, type WatchState } from './pull/delete-watch.js';
import { decideWatermark } from './pull/watermark.js';

export { listLockName };
export type { PendingHandler };

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

export interface PullDeps extends JobDeps {
  clock?: () => Date;
  onPage?: (p: PageProgress) => void;
  onPending?: PendingHandler;
}

export interface PullResult {
  runId: number;
  list: string;
  status: 'succeeded' | 'failed' | 'stopped';
  resumed: boolean;
  windowFrom: string | null;
  windowTo: string | null;
  /** How the run read: newest first down to the high-water mark, or by the immutable sort field. */
  order: PullPlan['order'];
  /** Why a pull that could read newest first did not. */
  fallback: string | null;
  watermark: string | null;
  highWater: string | null;
  watermarkHeld: boolean;
  /** Why the marks stayed. */
  heldBecause: string | null;
  counters: RunCounters;
  schemaChanges: string[];
}

const CHECKPOINT_VERSION = 2;

interface PullCheckpoint {
  version: typeof CHECKPOINT_VERSION;
  runId: number;
  mode: 'incremental' | 'backfill';
  startDate: string;
  plan: PullPlan;
  nextPage: number;
  watch: WatchState;
  /** Distinct IDs received by the committed pages. */
  received: number;
  highWaterAtStart: string | null;
}

/** Asked of a newest-first read that cannot go on; the run reads by-created instead. */
class FallbackNeeded extends Error {}

export async function pullList(deps: PullDeps, list: ListConfig, mode: PullMode = { kind: 'incremental' }): Promise<PullResult> {
  const job = mode.kind === 'incremental' ? 'pull' : 'backfill';
  return runJob(
    deps,
    { list: list.name, job, lockName: listLockName(list.name), waitMs: deps.waitMs ?? 0, holderJobs: LIST_JOBS, recordSkipped: true },
    (run) => pullLocked(deps, list, mode, job, run),
  );
}

interface RunContext {
  deps: PullDeps;
  list: ListConfig;
  job: 'pull' | 'backfill';
  run: ActiveRun;
  mapping: TableMapping;
  zone: string;
  takeRequests: () => Partial<RunCounters>;
  counters: RunCounters;
  itemsSoFar: number;
}

async function pullLocked(deps: PullDeps, list: ListConfig, mode: PullMode, job: 'pull' | 'backfill', run: ActiveRun): Promise<PullResult> {
  const { db, config } = deps;
  const zone = config.platform.timeZone;
  const now = deps.clock ?? (() => new Date());

  const { mapping, fields } = await prepareTable(deps, list, run);
  const schemaChanges = mapping.changes ?? [];
  const state = await readState<PullCheckpoint>(db, list.name, job);
  const refill = await markRefill(deps, mapping, mode, state);
  const planInput: PlanInput = {
    mode,
    watermark: state.watermark,
    highWater: state.highWater,
    lookbackDays: list.lookbackDays,
    overlapMinutes: list.overlapMinutes,
    zone,
    refill,
    cursorUnsortable: cursorUnsortable(fields, list.cursorField),
  };
  let { cp, resumed } = startOrResume(state, mode, planInput, platformDate(now(), zone));
  if (refill) run.log.warn({ changes: schemaChanges }, 'new field(s) on the platform: re-reading the whole list once to fill them');

  const ctx: RunContext = {
    deps,
    list,
    job,
    run,
    mapping,
    zone,
    takeRequests: requestDelta(deps.client, run),
    counters: zeroCounters(),
    itemsSoFar: 0,
  };
  await describeRun(db, run.runId, {
    windowFrom: cp.plan.windowFrom,
    windowTo: cp.plan.windowTo,
    resumed,
    details: runDetails(cp, resumed),
  });
  cp.runId = run.runId;
  run.log.info(
    {
      order: cp.plan.order,
      windowFrom: cp.plan.windowFrom,
      windowTo: cp.plan.windowTo,
      stopBefore: cp.plan.stopBefore,
      resumed,
      fromPage: cp.nextPage,
    },
    `${job} started`,
  );
  if (cp.plan.fallback)
    run.log.warn({ fallback: cp.plan.fallback }, 'reading the date window by the immutable sort field instead of newest first');

  let read: ReadOutcome;
  try {
    read = await readWindow(ctx, cp).catch(async (err: unknown) => {
      if (!(err instanceof FallbackNeeded)) throw err;
      run.log.warn(
        { fallback: err.message },
        'newest-first read cannot go on; reading the date window by the immutable sort field instead',
      );
      cp = freshCheckpoint(mode, fallbackPlan(planInput, err.message), cp.startDate, run.runId);
      resumed = false;
      await writeCheckpoint(db, list.name, job, null);
      await describeRun(db, run.runId, {
        windowFrom: cp.plan.windowFrom,
        windowTo: cp.plan.windowTo,
        resumed,
        details: runDetails(cp, resumed),
      });
      return readWindow(ctx, cp);
    });
  } catch (err) {
    return failed(ctx, err);
  }

  const result = (
    status: PullResult['status'],
    marks: { watermark: string | null; highWater: string | null; held: string | null },
  ): PullResult => ({
    runId: run.runId,
    list: list.name,
    status,
    resumed,
    windowFrom: cp.plan.windowFrom,
    windowTo: cp.plan.windowTo,
    order: cp.plan.order,
    fallback: cp.plan.fallback,
    watermark: marks.watermark,
    highWater: marks.highWater,
    watermarkHeld: marks.held !== null,
    heldBecause: marks.held,
    counters: ctx.counters,
    schemaChanges,
  });
  if (read.stopped) {
    await finishRun(db, run.runId, 'failed', { error: 'stopped by shutdown; the checkpoint is kept', counters: ctx.counters });
    run.log.warn({ nextPage: cp.nextPage }, `${job} stopped by shutdown after a complete page`);
    return result('stopped', { watermark: state.watermark, highWater: state.highWater, held: 'stopped by shutdown' });
  }

  const incomplete = readIncomplete(cp, read);
  if (incomplete) return failed(ctx, new Error(incomplete));
  const marks = decideWatermark({
    job,
    order: cp.plan.order,
    startDate: cp.startDate,
    previous: state,
    watch: read.watch,
    highWaterAtStart: read.highWaterAtStart,
  });
  await recordSuccess(ctx, cp, read, marks, schemaChanges);
  return result('succeeded', marks);
}

// ---- steps -------------------------------------------------------------

async function prepareTable(deps: PullDeps, list: ListConfig, run: ActiveRun): Promise<{ mapping: TableMapping; fields: FieldMeta[] }> {
  const known = await readRegistry(deps.db, list.name);
  // The list's title is for the table's comment: asked for while the mirror has none, not on every
  // pull (each request is the account's budget).
  const [fields, title] = await Promise.all([
    deps.client.getFields(list.appID, list.listID),
    known?.title ? undefined : listTitle(deps.client, list, deps.logger),
  ]);
  const mapping = await ensureMirrorTable(deps.db, {
    schema: deps.config.database.schema,
    list: { name: list.name, appID: list.appID, listID: list.listID, table: list.table ?? list.name },
    fields,
    idField: list.idField,
    versionField: list.versionField,
    timeZone: deps.config.platform.timeZone,
    columnNames: list.columnNames,
    columns: pinnedNames(list.columns),
    columnTypes: pinnedTypes(list.columns),
    omitsEmptyValues: deps.config.platform.omitsEmptyValues,
    reportingSchema: deps.config.database.reportingSchema,
    history: list.history,
    pushDeletes: list.pushDeletes,
    ...(title !== undefined ? { title } : {}),
    runId: run.runId,
    logger: deps.logger,
  });
  return { mapping, fields };
}

/**
 * A field added (or back) on the platform: existing rows have no value for it yet, and their
 * versions did not move. Re-read everything once, rewriting every row: their versions are set to
 * REFILL_VERSION, which no platform version equals, until the full read has rewritten them (a
 * run that fails before its first checkpoint finds them marked and starts the full read again).
 */
async function markRefill(deps: PullDeps, mapping: TableMapping, mode: PullMode, state: SyncState<PullCheckpoint>): Promise<boolean> {
  if (mode.kind !== 'incremental' || isResumable(state.checkpoint, mode) || state.watermark === null) return false;
  const table = `${mapping.schema}.${mapping.table}`;
  const fieldsAdded = (mapping.schemaChanges ?? []).some((c) => FIELD_APPEARED_KINDS.has(c.kind));
  if (fieldsAdded) {
    await deps.db.transaction(async (trx) => {
      await markListsyncWriter(trx);
      await trx.raw(`update ?? set row_version = ? where id not like 'local-%'`, [table, REFILL_VERSION]);
    });
  }
  return fieldsAdded || Boolean(await deps.db(table).where({ row_version: REFILL_VERSION }).first('id'));
}

function isResumable(prev: PullCheckpoint | null, mode: PullMode): prev is PullCheckpoint {
  if (!prev || prev.version !== CHECKPOINT_VERSION || prev.mode !== mode.kind) return false;
  return mode.kind === 'incremental' || (prev.plan.windowFrom === mode.from && prev.plan.windowTo === (mode.to ?? null));
}

function startOrResume(
  state: SyncState<PullCheckpoint>,
  mode: PullMode,
  planInput: PlanInput,
  startDate: string,
): { cp: PullCheckpoint; resumed: boolean } {
  if (isResumable(state.checkpoint, mode)) return { cp: state.checkpoint, resumed: true };
  return { cp: freshCheckpoint(mode, planWindow(planInput), startDate, 0), resumed: false };
}

function freshCheckpoint(mode: PullMode, plan: PullPlan, startDate: string, runId: number): PullCheckpoint {
  return {
    version: CHECKPOINT_VERSION,
    runId,
    mode: mode.kind,
    startDate,
    plan,
    nextPage: 1,
    watch: newWatch(),
    received: 0,
    highWaterAtStart: null,
  };
}

function cursorUnsortable(fields: readonly FieldMeta[], cursorField: string): string | null {
  const meta = fields.find((f) => f.FieldName === cursorField);
  if (meta && meta.IsSort === false && meta.IsIndex === false)
    return `the cursor field ${cursorField} is neither sortable nor indexed on the platform`;
  return null;
}

interface ReadOutcome {
  watch: WatchState;
  highWaterAtStart: string | null;
  received: number;
  stopped: boolean;
}

/** Reads the plan's pages into the writer; the checkpoint travels with every page. */
async function readWindow(ctx: RunContext, cp: PullCheckpoint): Promise<ReadOutcome> {
  const { deps, list, run } = ctx;
  const query = buildQuery(list, cp.plan);
  let expectedTotal: number | undefined;
  if (cp.plan.order === 'by-created' && cp.watch.lastKeyAtStart === undefined && cp.nextPage === 1 && ctx.job === 'pull') {
    await probeStart(ctx, cp, query);
    expectedTotal = cp.watch.firstTotal >= 0 ? cp.watch.firstTotal : undefined;
  }
  const writer = new PageWriter(
    {
      db: deps.db,
      mapping: ctx.mapping,
      zone: ctx.zone,
      runId: run.runId,
      list: list.name,
      job: ctx.job,
      concurrency: deps.config.database.pageWriters,
      onPending: deps.onPending ?? pendingConflictHandler(deps.config, list),
      takeRequests: ctx.takeRequests,
      onWritten: (page, result) => reportPage(ctx, page, result),
    },
    cp.nextPage,
    { ...cp },
  );
  const stopBeforeMs = cp.plan.stopBefore === null ? null : (cursorMillis(cp.plan.stopBefore, ctx.zone) ?? null);
  const checks = new PageChecks(list.idField, list.pageSize, cp.plan.order);
  let stopped = false;
  let previousCursor: number | undefined;
  try {
    for await (const page of readPages(
      deps.client,
      list,
      query,
      {
        order: cp.plan.order,
        startPage: cp.nextPage,
        zone: ctx.zone,
        stopBeforeMs,
        expectedTotal,
        lastKeyAtStart: cp.watch.lastKeyAtStart,
      },
      checks,
    )) {
      if (cp.plan.order === 'newest-first') {
        previousCursor = checkNewestFirst(page, list.cursorField, ctx.zone, previousCursor);
        if (page.index === 1 && cp.highWaterAtStart === null && page.items[0])
          cp.highWaterAtStart = cursorText(String(page.items[0][list.cursorField]), ctx.zone);
      }
      cp.watch = observePage(cp.watch, {
        totalCount: page.totalCount,
        keys: page.items.map((it) => sortKey(it, list)),
        repeats: page.repeats,
      });
      cp.received += page.ids.length - page.repeats;
      // The shutdown signal is checked between pages, not passed down: the page in flight is finished and written.
      await writer.write(page, { ...cp });
      if (deps.signal?.aborted) {
        stopped = true;
        break;
      }
    }
    await writer.drain();
    if (stopped) await writer.recordResumePoint();
  } catch (err) {
    await writer.settle();
    await writer.recordResumePoint().catch(() => undefined); // a database that is gone keeps the last per-page checkpoint
    addCounters(ctx.counters, writer.counters);
    cp.nextPage = writer.nextPage;
    if (cp.plan.order === 'newest-first' && err instanceof ValidationError && writer.counters.pages === 0) {
      throw new FallbackNeeded(`the platform refused to sort by the cursor field ${list.cursorField}: ${err.message}`);
    }
    throw err;
  }
  addCounters(ctx.counters, writer.counters);
  cp.nextPage = writer.nextPage;
  return { watch: cp.watch, highWaterAtStart: cp.highWaterAtStart, received: cp.received, stopped };
}

/**
 * Before a by-created read: the last item that exists now (items after it are created during the
 * run) and the newest modification time (the mark this run can vouch for). Recorded in the
 * checkpoint before any page, so a run killed at any point resumes knowing both.
 */
async function probeStart(ctx: RunContext, cp: PullCheckpoint, query: ItemQuery): Promise<void> {
  const { deps, list } = ctx;
  // Both asked at once, and both answered before any page is asked for.
  const [last, newest] = await Promise.all([topItem(ctx, list.sortField, query), newestModification(ctx)]);
  const lastItem = last.items[0];
  cp.watch = {
    ...cp.watch,
    lastKeyAtStart: lastItem ? sortKey(lastItem, list) : null,
    firstTotal: last.totalCount,
    lastTotal: last.totalCount,
    minTotal: last.totalCount,
  };
  cp.highWaterAtStart = newest;
  await writeCheckpoint(deps.db, list.name, ctx.job, { ...cp, runId: ctx.run.runId });
}

/** The item with the highest `field` (then ID) within the query's filters, and the filters' TotalCount: one item asked for. */
function topItem(ctx: RunContext, field: string, query: ItemQuery = {}): Promise<{ items: Item[]; totalCount: number }> {
  const { deps, list } = ctx;
  return deps.client.queryItems(list.appID, list.listID, {
    ...query,
    Fields: [field, list.idField],
    Sorts: [
      { Field: field, Desc: true },
      { Field: list.idField, Desc: true },
    ],
    PageIndex: 1,
    PageSize: 1,
  });
}

/** The newest cursor value on the platform now, or null when it cannot be asked or read. */
async function newestModification(ctx: RunContext): Promise<string | null> {
  const { list } = ctx;
  try {
    const { items } = await topItem(ctx, list.cursorField);
    const v = items[0]?.[list.cursorField];
    return typeof v === 'string' && cursorMillis(v, ctx.zone) !== undefined ? cursorText(v, ctx.zone) : null;
  } catch (err) {
    if (err instanceof ValidationError) return null;
    throw err;
  }
}

/** Newest first: every cursor value parses and none is newer than the one before it. Returns the page's last. */
function checkNewestFirst(page: CheckedPage, cursorField: string, zone: string, before: number | undefined): number | undefined {
  let prev = before;
  for (const item of page.items) {
    const ms = cursorMillis(item[cursorField], zone);
    if (ms === undefined)
      throw new FallbackNeeded(
        `the cursor field ${cursorField} holds ${JSON.stringify(item[cursorField])}, not a date-time (page ${page.index})`,
      );
    if (prev !== undefined && ms > prev) throw new FallbackNeeded(`page ${page.index} is not in newest-first order of ${cursorField}`);
    prev = ms;
  }
  return prev;
}

/** A read that ended without error but cannot be vouched for: the reason, or null. */
function readIncomplete(cp: PullCheckpoint, read: ReadOutcome): string | null {
  // A newest-first read stops at its mark by design; its pages are checked one by one.
  if (cp.plan.order !== 'by-created') return null;
  const w = read.watch;
  // Fewer distinct IDs than the platform counts, with nothing deleted under the read to explain it.
  if (w.lastTotal >= 0 && read.received < w.lastTotal && !w.decreaseSeen && w.minTotal >= w.firstTotal) {
    return `incomplete read: received ${read.received} distinct IDs but the platform's TotalCount is ${w.lastTotal}; the watermark stays`;
  }
  return null;
}

async function recordSuccess(
  ctx: RunContext,
  cp: PullCheckpoint,
  read: ReadOutcome,
  marks: { watermark: string | null; highWater: string | null; held: string | null },
  schemaChanges: readonly string[],
): Promise<void> {
  const { deps, list, job, run, mapping } = ctx;
  Object.assign(ctx.counters, { ...ctx.counters, ...sumRequests(ctx) });
  const fullRead = cp.plan.windowFrom === null && cp.plan.order === 'by-created';
  await deps.db.transaction(async (trx) => {
    await completeState(
      trx,
      list.name,
      job,
      marks.held ? null : job === 'pull' ? marks.watermark : null,
      marks.held ? null : marks.highWater,
    );
    if (fullRead && job === 'pull' && !marks.held) {
      // A full read rewrote every row the platform still has: rows left marked for a refill are gone there (reconcile marks them).
      await markListsyncWriter(trx);
      await trx.raw('update ?? set row_version = null where row_version = ?', [`${mapping.schema}.${mapping.table}`, REFILL_VERSION]);
    }
    await finishRun(trx, run.runId, 'succeeded', {
      counters: ctx.counters,
      details: {
        order: cp.plan.order,
        ...(cp.plan.fallback ? { fallback: cp.plan.fallback } : {}),
        stopBefore: cp.plan.stopBefore,
        watermark: marks.watermark,
        highWater: marks.highWater,
        watermarkHeld: marks.held !== null,
        ...(marks.held ? { heldBecause: marks.held } : {}),
        firstTotal: read.watch.firstTotal,
        lastTotal: read.watch.lastTotal,
        received: read.received,
        createdDuringRun: read.watch.createdSeen,
        repeats: read.watch.repeats,
        ...(schemaChanges.length ? { schemaChanges } : {}),
      },
    });
  });
  if (marks.held) run.log.warn({ heldBecause: marks.held }, 'the watermark stays so the next run re-reads this window');
  run.log.info({ ...ctx.counters, watermark: marks.watermark, highWater: marks.highWater }, `${job} finished`);
}

async function failed(ctx: RunContext, err: unknown): Promise<never> {
  const e = coerceError(err);
  Object.assign(ctx.counters, { ...ctx.counters, ...sumRequests(ctx) });
  // When the database itself failed this cannot be written either; runJob reports the original error.
  await finishRun(ctx.deps.db, ctx.run.runId, 'failed', { error: e.message, counters: ctx.counters }).catch(() => undefined);
  ctx.run.log.error({ err: e }, `${ctx.job} failed; committed pages stay, the checkpoint is kept and the watermark does not move`);
  throw err;
}

// ---- small helpers -------------------------------------------------------

/** row_version of rows waiting for a full re-read after the platform added a field. */
const REFILL_VERSION = -1;

function requestDelta(client: PlatformClient, run: ActiveRun): () => Partial<RunCounters> {
  let mark = run.statsAtStart;
  return () => {
    const s = client.stats();
    const delta = { requests: s.requests - mark.requests, retries: s.retries - mark.retries };
    mark = s;
    return delta;
  };
}

/** The run's counters plus the requests not yet counted with a page. */
function sumRequests(ctx: RunContext): Pick<RunCounters, 'requests' | 'retries'> {
  const tail = ctx.takeRequests();
  return { requests: ctx.counters.requests + (tail.requests ?? 0), retries: ctx.counters.retries + (tail.retries ?? 0) };
}

function addCounters(into: RunCounters, from: RunCounters): void {
  for (const k of Object.keys(from) as (keyof RunCounters)[]) into[k] += from[k];
  for (const k of Object.keys(from) as (keyof RunCounters)[]) from[k] = 0;
}

function reportPage(
  ctx: RunContext,
  page: CheckedPage | { index: number; pageCount: number; totalCount: number; items: unknown[] },
  result: UpsertResult,
): void {
  ctx.itemsSoFar += page.items.length;
  if (result.failures.length)
    ctx.run.log.warn(
      { page: page.index, failures: result.failures.slice(0, 5) },
      `${result.failedValues} value(s) did not convert; kept raw in _raw`,
    );
  ctx.deps.onPage?.({
    list: ctx.list.name,
    runId: ctx.run.runId,
    page: page.index,
    pageCount: page.pageCount,
    totalCount: page.totalCount,
    items: page.items.length,
    itemsSoFar: ctx.itemsSoFar,
    result,
  });
}

function runDetails(cp: PullCheckpoint, resumed: boolean): Record<string, unknown> {
  return {
    order: cp.plan.order,
    ...(cp.plan.fallback ? { fallback: cp.plan.fallback } : {}),
    ...(resumed ? { resumedFromPage: cp.nextPage, resumedRun: cp.runId } : {}),
  };
}
