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
 *    (pull-complete: completeness checks; pull-decisions; pull-repeat-explained.)
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
 * at once), prepare the table (pull/table-setup.ts), plan the window
 * (pull/plan.ts) or resume the checkpoint (pull/checkpoint.ts), read the
 * window (pull/window-read.ts: the checked pages of pull/page-reader.ts into
 * the ordered writer of pull/page-writer.ts under the delete watch of
 * pull/delete-watch.ts, with the field check of pull/field-check.ts), re-read
 * the gaps (pull/gap-reread.ts), read the follow-up (pull/follow-up-read.ts), then
 * judge the read (pull/completeness.ts), decide the marks (pull/watermark.ts)
 * and record the outcome. Each step returns the checkpoint it leaves; the
 * rules are pure (pull/checkpoint.ts, completeness.ts, follow-up.ts,
 * newest-first.ts, repeat-explained.ts, read-order.ts) and tested by tables.
 */
import type { ListConfig } from '../config.js';
import { platformDate } from '../platform/dates.js';
import { markListsyncWriter } from '../mirror/index.js';
import { noteItemKeys } from '../store/registry.js';
import { LIST_JOBS, listLockName } from './lock.js';
import { runJob, RunFailed, type ActiveRun, type RunEnd, type RunOutcome } from './run-job.js';
import { describeRun, zeroCounters } from '../store/runs.js';
import { completeState, readState, writeCheckpoint, type SyncState } from '../store/state.js';
import { firstLoad, freshCheckpoint, startOrResume, type PullCheckpoint, type PullMode } from './pull/checkpoint.js';
import { readIncomplete } from './pull/completeness.js';
import { FieldsChanged } from './pull/field-check.js';
import { buildQuery, cursorUnsortable, fallbackPlan, FULL_READ, type PlanInput } from './pull/plan.js';
import type { PullDeps, PullResult, RunContext } from './pull/run-context.js';
import { startEarly, type EarlyStart } from './pull/start.js';
import { markRefill, prepareTable, REFILL_VERSION } from './pull/table-setup.js';
import { decideWatermark } from './pull/watermark.js';
import { FallbackNeeded, readWindow, type ReadOutcome } from './pull/window-read.js';

export type { PullMode } from './pull/checkpoint.js';
export type { PageProgress, PullDeps, PullResult } from './pull/run-context.js';

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

/** A pull in named steps: start (or resume) the run, read the window, then settle the marks. */
async function pullLocked(
  deps: PullDeps,
  list: ListConfig,
  mode: PullMode,
  job: 'pull' | 'backfill',
  run: ActiveRun,
): Promise<RunEnd<PullResult>> {
  const s = await startRun(deps, list, mode, job, run);
  let read: WindowRead;
  try {
    read = await readWithFallback(s, mode);
  } catch (err) {
    if (err instanceof FieldsChanged) throw err;
    return failed(s.ctx, err);
  }
  const { state, ctx } = s;
  const { cp } = read;
  if (read.stopped) {
    Object.assign(ctx.counters, run.requests());
    run.log.warn({ nextPage: cp.nextPage }, `${job} stopped by shutdown after a complete page`);
    const result = pullResult(ctx, read, 'stopped', {
      watermark: state.watermark,
      highWater: state.highWater,
      held: 'stopped by shutdown',
    });
    return { outcome: { status: 'failed', error: 'stopped by shutdown; the checkpoint is kept', counters: ctx.counters }, result };
  }

  const incomplete = readIncomplete(cp.plan, read.watch, read.received);
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
  const outcome = await recordSuccess(ctx, cp, read, marks, ctx.schemaChanges);
  return { outcome, result: pullResult(ctx, read, 'succeeded', marks) };
}

/** A run as it started: its context, the kept state, the checkpoint it reads from and whether it resumed one. */
interface StartedRun {
  ctx: RunContext;
  state: SyncState<PullCheckpoint>;
  cp: PullCheckpoint;
  resumed: boolean;
  planInput: PlanInput;
  early: EarlyStart | null;
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
  const table = await prepareTable(deps, list, run);
  const schemaChanges = table.mapping.changes ?? [];
  const refill = await markRefill(deps, table.mapping, mode, state);
  const planInput: PlanInput = {
    mode,
    watermark: state.watermark,
    highWater: state.highWater,
    lookbackDays: list.lookbackDays,
    overlapMinutes: list.overlapMinutes,
    zone,
    refill,
    cursorUnsortable: cursorUnsortable(table.fields, list.cursorField),
  };
  const planned = startOrResume(state, mode, planInput, platformDate(now(), zone));
  if (refill) run.log.warn({ changes: schemaChanges }, 'new field(s) on the platform: re-reading the whole list once to fill them');

  const ctx: RunContext = {
    deps,
    list,
    job,
    run,
    mapping: table.mapping,
    zone,
    takeRequests: () => run.takeRequests(),
    counters: zeroCounters(),
    itemsSoFar: 0,
    fieldsAsked: table.fieldsAsked,
    knownKeys: table.knownKeys,
    unknownKeys: new Set(table.quietAdded),
    quietKeys: table.quietKeys,
    schemaChanges: [...schemaChanges],
    refilledMidRun: false,
  };
  await describeStart(ctx, planned.cp, planned.resumed);
  return { ctx, state, cp: { ...planned.cp, runId: run.runId }, resumed: planned.resumed, planInput, early };
}

/** The run's window and how it reads, in the run's row and the log (`cp`: as planned or resumed, before it takes this run's ID). */
async function describeStart(ctx: RunContext, cp: PullCheckpoint, resumed: boolean): Promise<void> {
  const { run, job } = ctx;
  await describeRun(ctx.deps.db, run.runId, {
    windowFrom: cp.plan.windowFrom,
    windowTo: cp.plan.windowTo,
    resumed,
    details: runDetails(cp, resumed),
  });
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
}

/** The read as it ended, and whether it went on from a resumed checkpoint. */
type WindowRead = ReadOutcome & { resumed: boolean };

/** Reads the window as planned; a newest-first read that cannot go on starts again by the immutable sort field. */
async function readWithFallback(s: StartedRun, mode: PullMode): Promise<WindowRead> {
  const { ctx } = s;
  const { db } = ctx.deps;
  const { run, list, job } = ctx;
  try {
    return { ...(await readWindow(ctx, s.cp, s.early)), resumed: s.resumed };
  } catch (err) {
    if (!(err instanceof FallbackNeeded)) throw err;
    run.log.warn({ fallback: err.message }, 'newest-first read cannot go on; reading the date window by the immutable sort field instead');
    const cp = freshCheckpoint(mode, fallbackPlan(s.planInput, err.message), s.cp.startDate, run.runId);
    await writeCheckpoint(db, list.name, job, null);
    await describeRun(db, run.runId, {
      windowFrom: cp.plan.windowFrom,
      windowTo: cp.plan.windowTo,
      resumed: false,
      details: runDetails(cp, false),
    });
    return { ...(await readWindow(ctx, cp, null)), resumed: false };
  }
}

function pullResult(
  ctx: RunContext,
  read: WindowRead,
  status: PullResult['status'],
  marks: { watermark: string | null; highWater: string | null; held: string | null },
): PullResult {
  const { plan } = read.cp;
  return {
    runId: ctx.run.runId,
    list: ctx.list.name,
    status,
    resumed: read.resumed,
    windowFrom: plan.windowFrom,
    windowTo: plan.windowTo,
    order: plan.order,
    fallback: plan.fallback,
    watermark: marks.watermark,
    highWater: marks.highWater,
    watermarkHeld: marks.held !== null,
    heldBecause: marks.held,
    counters: ctx.counters,
    schemaChanges: ctx.schemaChanges,
  };
}

// ---- the run's record -----------------------------------------------------

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

function runDetails(cp: PullCheckpoint, resumed: boolean): Record<string, unknown> {
  return {
    order: cp.plan.order,
    ...(cp.plan.fallback ? { fallback: cp.plan.fallback } : {}),
    ...(resumed ? { resumedFromPage: cp.nextPage, resumedRun: cp.runId } : {}),
  };
}
