/**
 * Pull: platform -> mirror, incremental or over a fixed date range (backfill).
 *
 * The cursor. The platform filters the cursor field (`Modified`) by calendar
 * date only (operator 2, `YYYY-MM-DD` in its zone). A pull remembers, besides
 * that date (the watermark), the highest modification time its last
 * successful run can vouch for (`sync_state.high_water`, the platform's
 * clock), and reads newest first: the date filter from `high_water −
 * overlapMinutes`, sorted by the cursor field then the ID, descending,
 * stopping at the first page that reaches items modified before that time.
 * A first pull, a refill after a new field and a backfill read by-created
 * (the immutable sort field then the ID, ascending, to the end). If the
 * cursor cannot be sorted on or its values do not parse, the run falls back
 * to the date window (`watermark − lookbackDays`) by-created and says so in
 * the log and `sync_runs.details.fallback`.
 *
 * Invariants (each tested; the test files are named):
 *
 * I1 Nothing is skipped unnoticed. Pages are slices by position; only a
 *    delete before the read position moves an unread item forward, past a
 *    boundary, and then TotalCount seen after the boundary is lower than
 *    before it. The delete watch records every such boundary (a gap), and
 *    the run re-reads exactly the gaps (pull/gap-read.ts) before it ends.
 *    Creates and edits only move items back (an item comes twice) or to the
 *    end. (pull-decisions: observePage, coverGap, readGaps; pull-activity:
 *    a delete every 5 s.)
 * I2 The marks move on every run that can vouch for its read, including a
 *    run under steady deletes and edits; they stay only when a gap could not
 *    be re-read, when creates hid a drop (by-created balance), or when more
 *    items came twice than moved to the front (newest first). A backfill
 *    never moves them; a high-water mark never goes back.
 *    (pull-decisions: decideWatermark; pull-activity.)
 * I3 The high-water mark is a time the run has read everything up to:
 *    the newest modification time when the run started (asked before a
 *    by-created read, the first item of a newest-first one), or, after a
 *    by-created read of several pages, a resumed read or a newest-first read
 *    that saw items twice, what the follow-up read (newest first down to
 *    that start mark) saw first, provided its own
 *    pages held together. Items modified later carry a later time and the
 *    next run reads them. A resumed run's start mark is its first attempt's,
 *    so its follow-up reads everything that moved since then onto pages the
 *    killed attempts had read. (pull-kills; pull-activity: 20 edits/s.)
 * I4 An ID served twice is believed only for a reason the run can see: in
 *    by-created order, the item was modified in or after the start mark's
 *    second (the mark has whole seconds), the count moved between the two
 *    pages, or the read is a date window; in newest first order, as many items moved to the front meanwhile (the follow-up
 *    counts them). Otherwise the page fails its check or the marks stay.
 *    (pull-complete: completeness checks; pull-decisions.)
 * I5 Every state written is right if the process dies on the next line: a
 *    page, the run's counters and the checkpoint (with the delete watch and
 *    its gaps) commit in one transaction; the start answers are in the
 *    checkpoint before any page commits; gap and follow-up items are written
 *    without moving the checkpoint, so a run killed there reads them again;
 *    the marks move only in the transaction that finishes the run.
 *    (pull: SIGKILL; pull-kills; pull-complete: killed full loads.)
 * I6 A first full load asks its fields (and its title while the mirror has
 *    none) and its first page at once; a first page that holds the whole
 *    list gives the start answers itself, a bigger list asks the start probes
 *    then and its first page again; the follow-up's first page is asked as
 *    the read's own last page is, so the account's budget is busy from the
 *    first request; no page is believed before the start answers are
 *    recorded. (pull-complete: what a first full load costs in requests;
 *    many-lists: what a first pull of many small lists costs.)
 * I7 A run asks the field metadata only for a reason (src/sync/list-fields.ts);
 *    one that used the kept metadata and reads a page whose items say the
 *    fields changed (pull/schema-signals.ts: a key it does not name, a field
 *    no item carries, a removed field's key back, a value its column cannot
 *    hold) asks `/fields` before that page is written, at most once a run:
 *    on its first page it starts again (nothing is written yet), on a later
 *    one it waits for the pages in flight, sets the table up from the answer
 *    and writes on with it. A field that appears then is filled by the next
 *    run's full read (the rows are marked for it). (many-lists; slot-reuse;
 *    kind-change; missing-keys; pull-schema-signals.)
 *
 * Failure modes outside these, and what covers them: the platform's clock
 * behind, or a query index lagging a write (items stamped up to
 * `overlapMinutes` before the mark are re-read; beyond that reconcile
 * heals); a back-dated `Modified` (reconcile); an ambiguous local time in a
 * DST fall-back hour (keep `overlapMinutes` or reconcile in mind).
 *
 * The steps: read the state (and, for a first load, ask the first requests
 * at once), prepare the table, plan the window (pull/plan.ts), read the
 * checked pages (pull/page-reader.ts) into the ordered writer
 * (pull/page-writer.ts) under the delete watch (pull/delete-watch.ts),
 * re-read the gaps, read the follow-up, then decide the marks
 * (pull/watermark.ts) and record the outcome.
 */
import { pinnedNames, pinnedTypes, type ListConfig } from '../config.js';
import { ValidationError } from '../platform/platform-errors.js';
import type { FieldMeta, Item, ItemQuery } from '../platform/types.js';
import type { PageResult } from '../platform/paging.js';
import { itemId } from '../platform/item-identity.js';
import { platformDate } from '../platform/dates.js';
import { ensureMirrorTable, markListsyncWriter, readRegistry, type TableMapping, type UpsertResult } from '../mirror/index.js';
import { FIELD_APPEARED_KINDS } from '../schema-change.js';
import { listTitle, type ListTitles } from './list-title.js';
import { collectUnknownKeys, fieldsAskReason, knownItemKeys } from './list-fields.js';
import { describeSignals, keySignals, unfitValues, valueSignals, type SchemaSignal } from './pull/schema-signals.js';
import { storedVersions } from '../mirror/stored-versions.js';
import { itemVersion } from '../platform/item-identity.js';
import { noteItemKeys, readFieldMeta, recordFieldMeta } from '../store/registry.js';
import { LIST_JOBS, listLockName } from './lock.js';
import { runJob, RunFailed, type ActiveRun, type JobDeps, type PageDone, type RunEnd, type RunOutcome } from './run-job.js';
import { pendingConflictHandler } from '../conflicts/recording.js';
import { describeRun, zeroCounters, type RunCounters } from '../store/runs.js';
import { completeState, readState, writeCheckpoint, type SyncState } from '../store/state.js';
import {
  buildQuery,
  cursorMillis,
  cursorText,
  fallbackPlan,
  followUpPlan,
  planWindow,
  type PlanInput,
  type PullPlan,
} from './pull/plan.js';
import { PageChecks, readPages, sortKey, type CheckedPage, type ReadOptions, type RepeatExplained } from './pull/page-reader.js';
import { PageWriter, type PendingHandler } from './pull/page-writer.js';
import { newWatch, observePage, readOrderCompare, type SortKey, type WatchState } from './pull/delete-watch.js';
import { readGaps } from './pull/gap-read.js';
import { askStart, startEarly, type EarlyStart, type StartAnswers } from './pull/start.js';
import { decideWatermark, type CatchUpOutcome } from './pull/watermark.js';

export { listLockName };
export type { PendingHandler };

export type PullMode = { kind: 'incremental' } | { kind: 'backfill'; from: string; to?: string };

/** A pull's page: what every job's progress shows, and what the page's upsert did. */
export interface PageProgress extends PageDone {
  result: UpsertResult;
}

export interface PullDeps extends JobDeps {
  clock?: () => Date;
  onPage?: (p: PageProgress) => void;
  onPending?: PendingHandler;
  /** Ask the field metadata even when the kept one is fresh (`pull --refresh-schema`). */
  refreshSchema?: boolean;
  /** What the first page of an attempt that started again showed (the run asks the fields because of them). */
  signalsSeen?: readonly SchemaSignal[];
  /** Where a list without a title gets one: shared by the lists of one pull (one listing per application). */
  titles?: ListTitles;
  /**
   * A first load asks its start probes with its first page (see pull/start.ts): for a pull of one
   * list, bound by round trips; lists pulled together, bound by the budget, ask page 1 alone first.
   */
  startProbesEarly?: boolean;
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

const CHECKPOINT_VERSION = 3;

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
  /** Where the follow-up reads back to when earlier than the mark (pull/start.ts); absent: the mark. */
  followUpFrom?: string | null;
}

/** Asked of a newest-first read that cannot go on; the run reads by-created instead. */
class FallbackNeeded extends Error {}

/** The run's first page says the kept field metadata is out of date: the run starts again with the platform's. */
class FieldsChanged extends Error {
  constructor(readonly signals: readonly SchemaSignal[]) {
    super(describeSignals(signals));
  }
}

export async function pullList(deps: PullDeps, list: ListConfig, mode: PullMode = { kind: 'incremental' }): Promise<PullResult> {
  const job = mode.kind === 'incremental' ? 'pull' : 'backfill';
  return runJob(
    deps,
    { list: list.name, job, lockName: listLockName(list.name), waitMs: deps.waitMs ?? 0, holderJobs: LIST_JOBS, recordSkipped: true },
    (run) =>
      pullLocked(deps, list, mode, job, run).catch((err: unknown) => {
        if (!(err instanceof FieldsChanged)) throw err;
        // Nothing of this attempt was written: the same run starts again, asking the field metadata.
        run.log.info({ signs: err.message }, 'the items say the fields changed since they were asked: asking them again');
        return pullLocked({ ...deps, signalsSeen: err.signals }, list, mode, job, run);
      }),
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
  fieldsAsked: boolean;
  knownKeys: ReadonlySet<string>;
  /** Keys items carried that are not in `knownKeys`, and fields items leave out though listed: noted as quiet keys. */
  unknownKeys: Set<string>;
  /** Keys whose presence or absence in items says nothing of the fields (the registry's `item_keys`). */
  quietKeys: ReadonlySet<string>;
  /** Schema changes the run made, at its start and when a page made it ask the fields. */
  schemaChanges: string[];
  /** Fields appeared in the middle of the run: every row waits for the next run's full read. */
  refilledMidRun: boolean;
}

/** A pull in named steps: start (or resume) the run, read the window, then settle the marks. */
async function pullLocked(
  deps: PullDeps,
  list: ListConfig,
  mode: PullMode,
  job: 'pull' | 'backfill',
  run: ActiveRun,
): Promise<RunEnd<PullResult>> {
  const s = await startRun(deps, list, mode, job, run);
  let read: ReadOutcome;
  try {
    read = await readWithFallback(s, mode);
  } catch (err) {
    if (err instanceof FieldsChanged) throw err;
    return failed(s.ctx, err);
  }
  const { state, cp, ctx } = s;
  if (read.stopped) {
    Object.assign(ctx.counters, run.requests());
    run.log.warn({ nextPage: cp.nextPage }, `${job} stopped by shutdown after a complete page`);
    const result = pullResult(s, 'stopped', { watermark: state.watermark, highWater: state.highWater, held: 'stopped by shutdown' });
    return { outcome: { status: 'failed', error: 'stopped by shutdown; the checkpoint is kept', counters: ctx.counters }, result };
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
    gapsUnresolved: read.gapsUnresolved,
    catchUp: read.catchUp,
  });
  const outcome = await recordSuccess(ctx, s.cp, read, marks, ctx.schemaChanges);
  return { outcome, result: pullResult(s, 'succeeded', marks) };
}

/** A run as it started: its checkpoint and whether it resumed one (both replaced when the read falls back). */
interface StartedRun {
  ctx: RunContext;
  state: SyncState<PullCheckpoint>;
  cp: PullCheckpoint;
  resumed: boolean;
  planInput: PlanInput;
  early: EarlyStart | null;
  schemaChanges: string[];
}

/** Prepares the table, plans the read (or resumes the checkpoint's) and says so in the run and the log. */
async function startRun(deps: PullDeps, list: ListConfig, mode: PullMode, job: 'pull' | 'backfill', run: ActiveRun): Promise<StartedRun> {
  const { db, config } = deps;
  const zone = config.platform.timeZone;
  const now = deps.clock ?? (() => new Date());

  const state = await readState<PullCheckpoint>(db, list.name, job);
  const early = firstLoad(mode, state)
    ? startEarly(deps.client, list, zone, buildQuery(list, FULL_READ), deps.startProbesEarly === true)
    : null;
  const { mapping, fields, fieldsAsked, knownKeys, quietKeys, quietAdded } = await prepareTable(deps, list, run);
  const schemaChanges = mapping.changes ?? [];
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
  const { cp, resumed } = startOrResume(state, mode, planInput, platformDate(now(), zone));
  if (refill) run.log.warn({ changes: schemaChanges }, 'new field(s) on the platform: re-reading the whole list once to fill them');

  const ctx: RunContext = {
    deps,
    list,
    job,
    run,
    mapping,
    zone,
    takeRequests: () => run.takeRequests(),
    counters: zeroCounters(),
    itemsSoFar: 0,
    fieldsAsked,
    knownKeys,
    unknownKeys: new Set(quietAdded),
    quietKeys,
    schemaChanges: [...schemaChanges],
    refilledMidRun: false,
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
  return { ctx, state, cp, resumed, planInput, early, schemaChanges };
}

/** Reads the window as planned; a newest-first read that cannot go on starts again by the immutable sort field. */
async function readWithFallback(s: StartedRun, mode: PullMode): Promise<ReadOutcome> {
  const { ctx } = s;
  const { db } = ctx.deps;
  const { run, list, job } = ctx;
  return readWindow(ctx, s.cp, s.early).catch(async (err: unknown) => {
    if (!(err instanceof FallbackNeeded)) throw err;
    run.log.warn({ fallback: err.message }, 'newest-first read cannot go on; reading the date window by the immutable sort field instead');
    s.cp = freshCheckpoint(mode, fallbackPlan(s.planInput, err.message), s.cp.startDate, run.runId);
    s.resumed = false;
    await writeCheckpoint(db, list.name, job, null);
    await describeRun(db, run.runId, {
      windowFrom: s.cp.plan.windowFrom,
      windowTo: s.cp.plan.windowTo,
      resumed: s.resumed,
      details: runDetails(s.cp, s.resumed),
    });
    return readWindow(ctx, s.cp, null);
  });
}

function pullResult(
  s: StartedRun,
  status: PullResult['status'],
  marks: { watermark: string | null; highWater: string | null; held: string | null },
): PullResult {
  const { cp, ctx } = s;
  return {
    runId: ctx.run.runId,
    list: ctx.list.name,
    status,
    resumed: s.resumed,
    windowFrom: cp.plan.windowFrom,
    windowTo: cp.plan.windowTo,
    order: cp.plan.order,
    fallback: cp.plan.fallback,
    watermark: marks.watermark,
    highWater: marks.highWater,
    watermarkHeld: marks.held !== null,
    heldBecause: marks.held,
    counters: ctx.counters,
    schemaChanges: ctx.schemaChanges,
  };
}

// ---- steps -------------------------------------------------------------

interface PreparedTable {
  mapping: TableMapping;
  fields: FieldMeta[];
  /** The run asked `/fields` (else it used the kept answer). */
  fieldsAsked: boolean;
  /** Keys an item may carry; another is a field the mirror does not know yet. */
  knownKeys: ReadonlySet<string>;
  quietKeys: ReadonlySet<string>;
  /** Keys the signs that made this attempt ask show to be quiet (the answer still lists a missing field, lacks a key back). */
  quietAdded: string[];
}

async function prepareTable(deps: PullDeps, list: ListConfig, run: ActiveRun): Promise<PreparedTable> {
  const known = await readRegistry(deps.db, list.name);
  const kept = known ? await readFieldMeta(deps.db, list.name) : undefined;
  const askedAt = (deps.clock ?? (() => new Date()))();
  const seen = deps.signalsSeen ?? [];
  const why = seen.length
    ? `the items say the fields changed (${describeSignals(seen)})`
    : fieldsAskReason(known, kept, list, askedAt.getTime(), deps.refreshSchema === true);
  if (why) run.log.debug({ because: why }, 'asking the field metadata');
  // The list's title is for the table's comment: asked for while the mirror has none, not on every
  // pull (each request is the account's budget).
  const [fields, title] = await Promise.all([
    why || !kept ? deps.client.getFields(list.appID, list.listID) : kept.fields,
    known?.title ? undefined : (deps.titles?.titleOf(list) ?? listTitle(deps.client, list, deps.logger)),
  ]);
  const mapping = await ensureMirrorTable(deps.db, mirrorTableOptions(deps, list, fields, run, title));
  // Kept only once the table reflects it: a run that dies before asks again.
  if (why) await recordFieldMeta(deps.db, list.name, fields, askedAt);
  const itemKeys = kept?.itemKeys ?? [];
  return {
    mapping,
    fields,
    fieldsAsked: why !== null,
    knownKeys: knownItemKeys(list, fields, itemKeys),
    quietKeys: new Set(itemKeys),
    quietAdded: quietAfterAsking(deps.signalsSeen ?? [], fields),
  };
}

/** The options the mirror table is set up with, from a field list. */
function mirrorTableOptions(deps: PullDeps, list: ListConfig, fields: FieldMeta[], run: ActiveRun, title?: string) {
  return {
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
  };
}

/**
 * Signs the fresh answer does not bear out, as quiet keys (so they never make a run ask again): a field
 * it still lists that no item carried, a removed field's key items carry though it names no such field.
 */
function quietAfterAsking(signals: readonly SchemaSignal[], fields: readonly FieldMeta[]): string[] {
  const listed = new Set(fields.map((f) => f.FieldName));
  return signals
    .filter((sig) => (sig.kind === 'field-missing' && listed.has(sig.field)) || (sig.kind === 'removed-key-back' && !listed.has(sig.field)))
    .map((sig) => sig.field);
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
  if (fieldsAdded) await markAllForRefill(deps, mapping);
  return fieldsAdded || Boolean(await deps.db(table).where({ row_version: REFILL_VERSION }).first('id'));
}

async function markAllForRefill(deps: PullDeps, mapping: TableMapping): Promise<void> {
  await deps.db.transaction(async (trx) => {
    await markListsyncWriter(trx);
    await trx.raw(`update ?? set row_version = ? where id not like 'local-%'`, [`${mapping.schema}.${mapping.table}`, REFILL_VERSION]);
  });
}

/** The plan of a first full load: it does not depend on the fields, so its first requests need not wait for them. */
const FULL_READ: PullPlan = { order: 'by-created', windowFrom: null, windowTo: null, stopBefore: null, fallback: null };

function firstLoad(mode: PullMode, state: SyncState<PullCheckpoint>): boolean {
  return mode.kind === 'incremental' && state.watermark === null && !isResumable(state.checkpoint, mode);
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
  /** Why a gap the delete watch found could not be re-read, or null. */
  gapsUnresolved: string | null;
  /** Items found in the gaps (read past while paging, written since). */
  gapItems: number;
  catchUp: CatchUpOutcome | null;
}

/** Reads the plan's pages into the writer (the checkpoint travels with every page), then re-reads the gaps and the follow-up. */
async function readWindow(ctx: RunContext, cp: PullCheckpoint, early: EarlyStart | null): Promise<ReadOutcome> {
  const { deps, list } = ctx;
  const query = buildQuery(list, cp.plan);
  // What was asked early is used only for the query it was asked for.
  const asked = early && !cp.plan.fallback && JSON.stringify(early.query) === JSON.stringify(query) ? early : null;
  const start = await recordStartIfNeeded(ctx, cp, query, asked);
  const expectedTotal = start?.expectedTotal;
  // The early first page is the read's page 1 only when the start answers were read off it.
  const firstPage = start?.fromFirstPage ? asked?.firstPage : undefined;
  const writer = newWriter(ctx, cp);
  const checks = new PageChecks(list.idField, list.pageSize, cp.plan.order, repeatExplained(ctx, cp));
  const pagesBefore = cp.nextPage - 1;
  const tail: ReadTail = { previousCursor: undefined, followUpFirst: undefined };
  let stopped = false;
  let after: AfterPages = { gapsUnresolved: null, gapItems: 0, catchUp: null };
  try {
    // A by-created read asks the follow-up's first page as its own last page is asked, so they leave together.
    const askFollowUp = (): void => {
      if (tail.followUpFirst === undefined && cp.plan.order === 'by-created') tail.followUpFirst = askFollowUpPage(ctx, cp);
    };
    const pages = readPages(
      deps.client,
      list,
      query,
      { ...readOptions(ctx, cp, expectedTotal, firstPage), onLastPageAsked: askFollowUp },
      checks,
    );
    let pagesSeen = 0;
    for await (const page of pages) {
      observe(ctx, cp, page, tail);
      // Before the page is written: do its items say the kept field metadata is out of date?
      await checkFields(ctx, writer, page.items, pagesSeen++ === 0);
      // The shutdown signal is checked between pages, not passed down: the page in flight is finished and written.
      await writer.write(page, { ...cp });
      if (deps.signal?.aborted) {
        stopped = true;
        break;
      }
    }
    await writer.drain();
    if (stopped) await writer.recordResumePoint();
    else {
      after = await afterPages(
        ctx,
        cp,
        query,
        writer,
        checks,
        followUpWanted(cp, writer.nextPage - 1 - pagesBefore, pagesBefore > 0),
        tail.followUpFirst ?? undefined,
      );
    }
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
  return { watch: cp.watch, highWaterAtStart: cp.highWaterAtStart, received: cp.received, stopped, ...after };
}

/**
 * A by-created pull's start answers, recorded before any page; returns the count they give (pages fan
 * out from it) and whether they were read off the early first page.
 */
async function recordStartIfNeeded(
  ctx: RunContext,
  cp: PullCheckpoint,
  query: ItemQuery,
  asked: EarlyStart | null,
): Promise<{ expectedTotal: number | undefined; fromFirstPage: boolean } | undefined> {
  if (cp.plan.order !== 'by-created' || cp.watch.lastKeyAtStart !== undefined || cp.nextPage !== 1 || ctx.job !== 'pull') return undefined;
  const answers = await (asked?.start ?? askStart(ctx.deps.client, ctx.list, ctx.zone, query));
  await recordStart(ctx, cp, answers);
  return {
    expectedTotal: cp.watch.firstTotal >= 0 ? cp.watch.firstTotal : undefined,
    fromFirstPage: 'fromFirstPage' in answers && answers.fromFirstPage === true,
  };
}

function newWriter(ctx: RunContext, cp: PullCheckpoint): PageWriter {
  const { deps, list } = ctx;
  return new PageWriter(
    {
      db: deps.db,
      mapping: ctx.mapping,
      zone: ctx.zone,
      runId: ctx.run.runId,
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
}

function readOptions(
  ctx: RunContext,
  cp: PullCheckpoint,
  expectedTotal: number | undefined,
  firstPage: Promise<PageResult<Item>> | undefined,
): ReadOptions {
  return {
    order: cp.plan.order,
    startPage: cp.nextPage,
    zone: ctx.zone,
    stopBeforeMs: cp.plan.stopBefore === null ? null : (cursorMillis(cp.plan.stopBefore, ctx.zone) ?? null),
    expectedTotal,
    lastKeyAtStart: cp.watch.lastKeyAtStart,
    firstPage: cp.nextPage === 1 ? firstPage : undefined,
  };
}

/** What the page loop carries from one page to the next. */
interface ReadTail {
  previousCursor: number | undefined;
  /** The follow-up's first page, once asked (null: not wanted). */
  followUpFirst: Promise<PageResult<Item>> | null | undefined;
}

/** One page into the run's accounting: the newest-first order check and start mark, the delete watch, the received count. */
function observe(ctx: RunContext, cp: PullCheckpoint, page: CheckedPage, tail: ReadTail): void {
  const { list, zone } = ctx;
  collectUnknownKeys(page.items, ctx.knownKeys, ctx.unknownKeys);
  if (cp.plan.order === 'newest-first') {
    tail.previousCursor = checkNewestFirst(page, list.cursorField, zone, tail.previousCursor, markMillis(ctx, cp));
    if (page.index === 1 && cp.highWaterAtStart === null && page.items[0])
      cp.highWaterAtStart = cursorText(String(page.items[0][list.cursorField]), zone);
  }
  const keyOf = readKey(ctx, cp.plan.order);
  cp.watch = observePage(cp.watch, {
    index: page.index,
    totalCount: page.totalCount,
    keys: cp.plan.order === 'by-created' ? page.items.map((it) => sortKey(it, list)) : [],
    first: page.items[0] && keyOf(page.items[0]),
    last: page.items.length ? keyOf(page.items[page.items.length - 1]!) : undefined,
    repeats: page.repeats,
  });
  cp.received += page.ids.length - page.repeats;
  // A read whose last page was not asked ahead (no page after its start page) asks the follow-up's first page here.
  if (tail.followUpFirst === undefined && cp.plan.order === 'by-created' && page.index > 1 && page.index >= page.pageCount - 1)
    tail.followUpFirst = askFollowUpPage(ctx, cp);
}

/**
 * Items about to be written, judged against the kept field metadata (pull/schema-signals.ts); on a
 * sign, `/fields` is asked before they are written: the run's first page starts the run again
 * (nothing is written yet), a later one sets the table up anew in place. Once a run has asked, no more.
 */
async function checkFields(ctx: RunContext, writer: PageWriter, items: readonly Item[], first: boolean): Promise<void> {
  if (ctx.fieldsAsked || items.length === 0) return;
  const signals = await pageSignals(ctx, items);
  if (signals.length === 0) return;
  if (first) throw new FieldsChanged(signals);
  await refreshFields(ctx, writer, signals);
}

async function pageSignals(ctx: RunContext, items: readonly Item[]): Promise<SchemaSignal[]> {
  const { list, mapping } = ctx;
  const signals = keySignals(items, { mapping, knownKeys: ctx.knownKeys, quietKeys: ctx.quietKeys });
  const unfit = unfitValues(items, mapping, (item) => itemId(item[list.idField]), ctx.zone);
  if (unfit.size === 0) return signals;
  // A value judged when its version was written is not judged again: only items the mirror does not hold at that version.
  const stored = await storedVersions(ctx.deps.db, mapping, [...unfit.keys()]);
  return [...signals, ...valueSignals(unfit, stored, (item) => itemVersion(item[list.versionField]))];
}

/**
 * Asks `/fields` in the middle of a read: the pages in flight are written first (with the mapping
 * they were read under), then the table is set up from the answer and the writer writes on with it.
 * A field that appeared has no values in the rows written so far: every row is marked for the next
 * run's full read (markRefill), and this run does not clear the marks.
 */
async function refreshFields(ctx: RunContext, writer: PageWriter, signals: readonly SchemaSignal[]): Promise<void> {
  const { deps, list, run } = ctx;
  run.log.info({ signs: describeSignals(signals) }, 'the items say the fields changed since they were asked: asking them again');
  await writer.drain();
  const askedAt = (deps.clock ?? (() => new Date()))();
  const fields = await deps.client.getFields(list.appID, list.listID);
  const mapping = await ensureMirrorTable(deps.db, mirrorTableOptions(deps, list, fields, run));
  await recordFieldMeta(deps.db, list.name, fields, askedAt);
  ctx.fieldsAsked = true;
  ctx.mapping = mapping;
  writer.useMapping(mapping);
  ctx.knownKeys = knownItemKeys(list, fields, [...ctx.quietKeys]);
  for (const key of quietAfterAsking(signals, fields)) ctx.unknownKeys.add(key);
  ctx.schemaChanges.push(...mapping.changes);
  if ((mapping.schemaChanges ?? []).some((c) => FIELD_APPEARED_KINDS.has(c.kind))) {
    await markAllForRefill(deps, mapping);
    ctx.refilledMidRun = true;
  }
}

/**
 * Whether the read ends with the follow-up: after a by-created read of more than one page, a
 * resumed read (its start mark is its first attempt's), or a newest-first read that saw items twice
 * (the follow-up counts the moves that explain them). A newest-first read with no repeats saw no
 * move it must account for; its start mark stands, and the next run reads what moved.
 */
function followUpWanted(cp: PullCheckpoint, pagesRead: number, resumed: boolean): boolean {
  if (resumed) return true;
  if (pagesRead <= 1) return false;
  return cp.plan.order === 'by-created' || cp.watch.repeats > 0;
}

interface AfterPages {
  gapsUnresolved: string | null;
  gapItems: number;
  catchUp: CatchUpOutcome | null;
}

/** After a complete read: the gaps re-read, then (a pull that spanned pages or resumed) the follow-up. */
async function afterPages(
  ctx: RunContext,
  cp: PullCheckpoint,
  query: ItemQuery,
  writer: PageWriter,
  checks: PageChecks,
  spanned: boolean,
  followUpFirst: Promise<PageResult<Item>> | undefined,
): Promise<AfterPages> {
  const gaps = await rereadGaps(ctx, cp, query, writer, checks);
  cp.received += gaps.newIds;
  const catchUp = ctx.job === 'pull' && spanned ? await readCatchUp(ctx, cp, writer, checks, followUpFirst) : null;
  return { gapsUnresolved: gaps.unresolved, gapItems: gaps.items, catchUp };
}

/**
 * by-created: why an ID served again is not a broken page: the item was modified after the run's
 * start mark, TotalCount moved between the two pages (a delete or create shifted the slice), or the
 * read is a date window, which edits move items into (shifting the rest back).
 */
function repeatExplained(ctx: RunContext, cp: PullCheckpoint): RepeatExplained {
  const windowed = cp.plan.windowFrom !== null;
  return (item, total, previousTotal) => {
    if (windowed || (previousTotal !== undefined && total !== previousTotal)) return true;
    const mark = markMillis(ctx, cp);
    const ms = cursorMillis(item[ctx.list.cursorField], ctx.zone);
    return mark !== undefined && ms !== undefined && ms >= mark; // the mark has whole seconds
  };
}

/** The run's start mark (the newest modification time when it started) in epoch ms, when known. */
function markMillis(ctx: RunContext, cp: PullCheckpoint): number | undefined {
  return cp.highWaterAtStart === null ? undefined : cursorMillis(cp.highWaterAtStart, ctx.zone);
}

/** An item's key in the order the read serves it: by-created the sort field then the ID, newest first the cursor then the ID. */
function readKey(ctx: RunContext, order: PullPlan['order']): (item: Item) => SortKey {
  const { list, zone } = ctx;
  if (order === 'by-created') return (item) => sortKey(item, list);
  return (item) => [String(cursorMillis(item[list.cursorField], zone) ?? ''), itemId(item[list.idField]) ?? ''];
}

/** Re-reads the gaps the delete watch found and writes what lies in them. */
async function rereadGaps(
  ctx: RunContext,
  cp: PullCheckpoint,
  query: ItemQuery,
  writer: PageWriter,
  checks: PageChecks,
): Promise<{ unresolved: string | null; items: number; newIds: number }> {
  const { deps, list } = ctx;
  if (cp.watch.gaps.length === 0) return { unresolved: null, items: 0, newIds: 0 };
  const fetchPage = async (index: number): Promise<Item[]> =>
    (await deps.client.queryItems(list.appID, list.listID, { ...query, PageIndex: index, PageSize: list.pageSize })).items;
  const order = cp.plan.order;
  const found = await readGaps(cp.watch.gaps, fetchPage, list.pageSize, readKey(ctx, order), readOrderCompare(order));
  if (found.items.length) {
    await checkFields(ctx, writer, found.items, false);
    await writer.writeItems(found.items);
  }
  const newIds = checks.note(found.items.map((it) => itemId(it[list.idField])!));
  ctx.run.log.info(
    { gaps: cp.watch.gaps.length, items: found.items.length, unread: newIds, unresolved: found.unresolved },
    'TotalCount fell while paging: the page boundaries it fell across were read again',
  );
  return { unresolved: found.unresolved, items: found.items.length, newIds };
}

/**
 * The follow-up read: newest first down to the run's start mark, so items edited or created while
 * the run paged (or, for a resumed run, since its first attempt started) are in the mirror when it
 * ends, and the high-water mark can move to what this read saw first. Skipped when the cursor cannot
 * be read newest first (the run fell back) or the start mark is unknown.
 */
async function readCatchUp(
  ctx: RunContext,
  cp: PullCheckpoint,
  writer: PageWriter,
  checks: PageChecks,
  firstPage?: Promise<PageResult<Item>>,
): Promise<CatchUpOutcome | null> {
  const { deps, list, zone } = ctx;
  const since = followUpFrom(cp);
  const sinceMs = since === null ? undefined : cursorMillis(since, zone);
  if (since === null || sinceMs === undefined || markMillis(ctx, cp) === undefined || cp.plan.fallback !== null) return null;
  const plan = followUpPlan(since);
  const followChecks = new PageChecks(list.idField, list.pageSize, 'newest-first');
  const keyOf = readKey(ctx, 'newest-first');
  const touched = new Set<string>();
  let watch = newWatch();
  let newest: string | null = null;
  const pages = readPages(
    deps.client,
    list,
    buildQuery(list, plan),
    { order: 'newest-first', startPage: 1, zone, stopBeforeMs: sinceMs, firstPage },
    followChecks,
  );
  for await (const page of pages) {
    if (page.index === 1 && page.items[0]) newest = cursorText(String(page.items[0][list.cursorField]), zone);
    watch = observePage(watch, {
      index: page.index,
      totalCount: page.totalCount,
      keys: [],
      first: page.items[0] && keyOf(page.items[0]),
      last: page.items.length ? keyOf(page.items[page.items.length - 1]!) : undefined,
      repeats: page.repeats,
    });
    // Only what was modified since the mark is written: the rest was read by the run's pages as it is now.
    const moved = page.items.filter((item, i) => {
      // The mark has whole seconds: an item modified in its second may have moved after it was taken.
      const ms = cursorMillis(item[list.cursorField], zone);
      if (ms === undefined) return true; // no time to compare: written, as the safe side
      if (ms < sinceMs) return false;
      touched.add(page.ids[i]!);
      return true;
    });
    if (moved.length) {
      await checkFields(ctx, writer, moved, false);
      await writeMoved(ctx, writer, checks, moved);
    }
    cp.received += checks.note(page.ids);
  }
  const outcome: CatchUpOutcome = { newest, touched: touched.size, clean: watch.gaps.length === 0 };
  ctx.run.log.info({ since, ...outcome }, 'read what changed while the run paged');
  return outcome;
}

/**
 * Writes the follow-up's items. One the run's pages already wrote is written again in case it moved
 * after it was read; found unchanged, it is not counted a second time, so a first load of N items
 * reports N rows (test/sync/pull.test.ts › mirrors a seeded list row for row).
 */
async function writeMoved(ctx: RunContext, writer: PageWriter, checks: PageChecks, items: readonly Item[]): Promise<void> {
  const seen = (item: Item): boolean => checks.has(itemId(item[ctx.list.idField])!);
  const fresh = items.filter((item) => !seen(item));
  const again = items.filter(seen);
  if (fresh.length) await writer.writeItems(fresh);
  if (again.length) await writer.writeItems(again, { countUnchanged: false });
}

/** What the follow-up reads back to: the mark, or earlier when the first page may have been served before it. */
function followUpFrom(cp: PullCheckpoint): string | null {
  return cp.highWaterAtStart === null ? null : (cp.followUpFrom ?? cp.highWaterAtStart);
}

/**
 * The follow-up's first page, asked ahead (a pull job whose start mark is known; null otherwise).
 * Asked before the read's last page is answered it is still right: it vouches for what was modified
 * before it was served, and anything modified later is newer than the mark it gives.
 */
function askFollowUpPage(ctx: RunContext, cp: PullCheckpoint): Promise<PageResult<Item>> | null {
  const { deps, list } = ctx;
  if (ctx.job !== 'pull' || cp.highWaterAtStart === null || markMillis(ctx, cp) === undefined || cp.plan.fallback !== null) return null;
  const query = { ...buildQuery(list, followUpPlan(followUpFrom(cp)!)), PageIndex: 1, PageSize: list.pageSize };
  const page = deps.client.queryPageResult(list.appID, list.listID, query);
  page.catch(() => undefined);
  return page;
}

/**
 * Before a by-created read: the start answers (see pull/start.ts), recorded in the checkpoint
 * before any page is believed, so a run killed at any point resumes knowing both.
 */
async function recordStart(ctx: RunContext, cp: PullCheckpoint, answers: StartAnswers): Promise<void> {
  const { deps, list } = ctx;
  const lastItem = answers.last.items[0];
  const total = answers.last.totalCount;
  cp.watch = {
    ...cp.watch,
    lastKeyAtStart: lastItem ? sortKey(lastItem, list) : null,
    firstTotal: total,
    lastTotal: total,
    minTotal: total,
  };
  cp.highWaterAtStart = answers.newest;
  cp.followUpFrom = answers.followUpFrom ?? null;
  await writeCheckpoint(deps.db, list.name, ctx.job, { ...cp, runId: ctx.run.runId });
}

/** Newest first: every cursor value parses and none is newer than the one before it. Returns the page's last. */
function checkNewestFirst(
  page: CheckedPage,
  cursorField: string,
  zone: string,
  before: number | undefined,
  markMs: number | undefined,
): number | undefined {
  let prev = before;
  for (const item of page.items) {
    const ms = cursorMillis(item[cursorField], zone);
    if (ms === undefined)
      throw new FallbackNeeded(
        `the cursor field ${cursorField} holds ${JSON.stringify(item[cursorField])}, not a date-time (page ${page.index})`,
      );
    // Modified in or after the second the run started: maybe edited while the run paged and served where the index
    // still had it; not held to the order (the follow-up reads it).
    if (markMs !== undefined && ms >= markMs && page.index > 1) continue;
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
  // A date window gains items edited into it meanwhile, some behind the read position (modified after the start:
  // the next run reads them); what it must have received is what it held at the start.
  const expected = cp.plan.windowFrom !== null ? w.firstTotal : w.lastTotal;
  // Fewer distinct IDs than the platform counts, with nothing deleted under the read to explain it.
  if (expected >= 0 && read.received < expected && !w.decreaseSeen && w.minTotal >= w.firstTotal) {
    return `incomplete read: received ${read.received} distinct IDs but the platform's TotalCount is ${expected}; the watermark stays`;
  }
  return null;
}

async function recordSuccess(
  ctx: RunContext,
  cp: PullCheckpoint,
  read: ReadOutcome,
  marks: { watermark: string | null; highWater: string | null; held: string | null },
  schemaChanges: readonly string[],
): Promise<RunOutcome & { status: 'succeeded' }> {
  const { deps, list, job, run, mapping } = ctx;
  Object.assign(ctx.counters, run.requests());
  const fullRead = cp.plan.windowFrom === null && cp.plan.order === 'by-created';
  const outcome = await deps.db.transaction(async (trx) => {
    await completeState(
      trx,
      list.name,
      job,
      marks.held ? null : job === 'pull' ? marks.watermark : null,
      marks.held ? null : marks.highWater,
    );
    if (fullRead && job === 'pull' && !marks.held && !ctx.refilledMidRun) {
      // A full read rewrote every row the platform still has: rows left marked for a refill are gone there (reconcile marks them).
      await markListsyncWriter(trx);
      await trx.raw('update ?? set row_version = null where row_version = ?', [`${mapping.schema}.${mapping.table}`, REFILL_VERSION]);
    }
    const settled = {
      status: 'succeeded',
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
        gaps: read.watch.gaps.length,
        gapItems: read.gapItems,
        ...(read.catchUp ? { followUp: read.catchUp } : {}),
        ...(schemaChanges.length ? { schemaChanges } : {}),
      },
    } as const;
    await run.settle(trx, settled);
    // Keys items carry that the metadata the run used does not name: kept metadata is asked again on the next run.
    if (ctx.unknownKeys.size) await noteItemKeys(trx, list.name, [...ctx.unknownKeys], !ctx.fieldsAsked);
    return settled;
  });
  if (ctx.unknownKeys.size && !ctx.fieldsAsked)
    run.log.info({ keys: [...ctx.unknownKeys] }, 'items carry keys the mirror does not know: the next run asks the field metadata again');
  if (marks.held) run.log.warn({ heldBecause: marks.held }, 'the watermark stays so the next run re-reads this window');
  run.log.info({ ...ctx.counters, watermark: marks.watermark, highWater: marks.highWater }, `${job} finished`);
  return outcome;
}

function failed(ctx: RunContext, err: unknown): never {
  // Only a run that committed a page can say it left one (a 401 on the first request wrote nothing).
  const kept = ctx.counters.pages > 0 ? 'committed pages stay, the checkpoint is kept' : 'this run wrote no page';
  throw new RunFailed(err, { counters: ctx.counters, line: `${ctx.job} failed; ${kept} and the watermark does not move` });
}

// ---- small helpers -------------------------------------------------------

/** row_version of rows waiting for a full re-read after the platform added a field. */
const REFILL_VERSION = -1;

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
