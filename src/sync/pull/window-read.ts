/**
 * The read of a run's window: the start answers recorded before any page
 * (pull/start.ts), the checked pages (pull/page-reader.ts) into the ordered
 * writer (pull/page-writer.ts) with the checkpoint beside each page, then the
 * gaps re-read (pull/gap-reread.ts) and the follow-up (pull/follow-up-read.ts).
 * Each step takes the checkpoint and returns the next one (pull/checkpoint.ts).
 */
import { ValidationError } from '../../platform/platform-errors.js';
import { coerceError } from '../../errors.js';
import type { PageResult } from '../../platform/paging.js';
import type { Item, ItemQuery } from '../../platform/types.js';
import type { UpsertResult } from '../../mirror/index.js';
import { pendingConflictHandler } from '../../conflicts/recording.js';
import type { RunCounters } from '../../store/runs.js';
import { writeCheckpoint } from '../../store/state.js';
import { collectUnknownKeys } from '../list-fields.js';
import { askFollowUpPage, readFollowUp } from './follow-up-read.js';
import { afterPage, startMarkMillis, withStartAnswers, type PullCheckpoint } from './checkpoint.js';
import type { WatchState } from './delete-watch.js';
import { checkFields } from './field-check.js';
import { followUpWanted } from './follow-up.js';
import { rereadGaps } from './gap-reread.js';
import { checkNewestFirst, fallsBackOnRefusal } from './newest-first.js';
import { PageChecks, readPages, type CheckedPage, type ReadOptions } from './page-reader.js';
import { PageWriter } from './page-writer.js';
import { buildQuery, cursorMillis } from './plan.js';
import { repeatExplained, type RepeatExplained } from './repeat-explained.js';
import type { RunContext } from './run-context.js';
import { askStart, type EarlyStart } from './start.js';
import type { CatchUpOutcome } from './watermark.js';

/** Asked of a newest-first read that cannot go on; the run reads by-created instead. */
export class FallbackNeeded extends Error {}

export interface ReadOutcome {
  /** The checkpoint as the read left it. */
  cp: PullCheckpoint;
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

/** What the read after the pages adds: the received count grows by the IDs found there. */
type AfterPages = Pick<ReadOutcome, 'cp' | 'gapsUnresolved' | 'gapItems' | 'catchUp'>;

/** Reads the plan's pages into the writer (the checkpoint travels with every page), then re-reads the gaps and the follow-up. */
export async function readWindow(ctx: RunContext, planned: PullCheckpoint, early: EarlyStart | null): Promise<ReadOutcome> {
  const { list } = ctx;
  const query = buildQuery(list, planned.plan);
  // What was asked early is used only for the query it was asked for.
  const asked = early && !planned.plan.fallback && JSON.stringify(early.query) === JSON.stringify(query) ? early : null;
  const start = await recordStartIfNeeded(ctx, planned, query, asked);
  const { cp } = start;
  const writer = newWriter(ctx, cp);
  const checks = new PageChecks(list.idField, list.pageSize, cp.plan.order, repeatRule(ctx, cp));
  let after: AfterPages;
  let stopped = false;
  try {
    const paged = await readPlannedPages(ctx, start, query, writer, checks);
    stopped = paged.stopped;
    after = stopped
      ? { cp: paged.cp, gapsUnresolved: null, gapItems: 0, catchUp: null }
      : await afterPages(ctx, paged, query, writer, checks, cp.nextPage - 1);
  } catch (err) {
    await writer.settle();
    await writer.recordResumePoint().catch(() => undefined); // a database that is gone keeps the last per-page checkpoint
    const fallBack = fallsBackOnRefusal(cp.plan.order, err instanceof ValidationError, writer.counters.pages);
    addCounters(ctx.counters, writer.counters);
    if (fallBack) {
      throw new FallbackNeeded(`the platform refused to sort by the cursor field ${list.cursorField}: ${coerceError(err).message}`);
    }
    throw err;
  }
  addCounters(ctx.counters, writer.counters);
  const done = { ...after.cp, nextPage: writer.nextPage };
  return { ...after, cp: done, watch: done.watch, highWaterAtStart: done.highWaterAtStart, received: done.received, stopped };
}

/** The checkpoint a read pages from, with what the start answers give the page reader. */
interface StartedRead {
  cp: PullCheckpoint;
  /** The count the start answers give (pages fan out from it). */
  expectedTotal: number | undefined;
  /** The early first page, when the start answers were read off it (it is then the read's page 1). */
  firstPage: Promise<PageResult<Item>> | undefined;
}

/** A by-created pull's start answers, recorded in the checkpoint before any page is believed, so a run killed at any point resumes knowing them. */
async function recordStartIfNeeded(ctx: RunContext, cp: PullCheckpoint, query: ItemQuery, asked: EarlyStart | null): Promise<StartedRead> {
  if (cp.plan.order !== 'by-created' || cp.watch.lastKeyAtStart !== undefined || cp.nextPage !== 1 || ctx.job !== 'pull')
    return { cp, expectedTotal: undefined, firstPage: undefined };
  const answers = await (asked?.start ?? askStart(ctx.deps.client, ctx.list, ctx.zone, query));
  const started = withStartAnswers(cp, answers, ctx.list);
  await writeCheckpoint(ctx.deps.db, ctx.list.name, ctx.job, { ...started, runId: ctx.run.runId });
  const fromFirstPage = 'fromFirstPage' in answers && answers.fromFirstPage === true;
  return {
    cp: started,
    expectedTotal: started.watch.firstTotal >= 0 ? started.watch.firstTotal : undefined,
    firstPage: fromFirstPage ? asked?.firstPage : undefined,
  };
}

function repeatRule(ctx: RunContext, cp: PullCheckpoint): RepeatExplained {
  const windowed = cp.plan.windowFrom !== null;
  return repeatExplained({ windowed, markMs: startMarkMillis(cp, ctx.zone), cursorField: ctx.list.cursorField, zone: ctx.zone });
}

/** What the page loop carries from one page to the next besides the checkpoint. */
interface ReadTail {
  previousCursor: number | undefined;
  /** The follow-up's first page, once asked (null: not wanted). */
  followUpFirst: Promise<PageResult<Item>> | null | undefined;
}

interface Paged {
  cp: PullCheckpoint;
  stopped: boolean;
  followUpFirst: Promise<PageResult<Item>> | undefined;
}

async function readPlannedPages(
  ctx: RunContext,
  start: StartedRead,
  query: ItemQuery,
  writer: PageWriter,
  checks: PageChecks,
): Promise<Paged> {
  const { deps, list } = ctx;
  let cp = start.cp;
  const tail: ReadTail = { previousCursor: undefined, followUpFirst: undefined };
  // A by-created read asks the follow-up's first page as its own last page is asked, so they leave together.
  const askFollowUp = (): void => {
    if (tail.followUpFirst === undefined && cp.plan.order === 'by-created') tail.followUpFirst = askFollowUpPage(ctx, cp);
  };
  const options = { ...readOptions(ctx, cp, start.expectedTotal, start.firstPage), onLastPageAsked: askFollowUp };
  let stopped = false;
  let pagesSeen = 0;
  for await (const page of readPages(deps.client, list, query, options, checks)) {
    cp = observe(ctx, cp, page, tail);
    // A read whose last page was not asked ahead (no page after its start page) asks the follow-up's first page here.
    if (page.index > 1 && page.index >= page.pageCount - 1) askFollowUp();
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
  return { cp, stopped, followUpFirst: tail.followUpFirst ?? undefined };
}

/** One page into the run's accounting: unknown keys, the newest-first order check, then the next checkpoint. */
function observe(ctx: RunContext, cp: PullCheckpoint, page: CheckedPage, tail: ReadTail): PullCheckpoint {
  const { list, zone } = ctx;
  collectUnknownKeys(page.items, ctx.knownKeys, ctx.unknownKeys);
  if (cp.plan.order === 'newest-first') {
    const order = checkNewestFirst(page, list.cursorField, zone, tail.previousCursor, startMarkMillis(cp, zone));
    if (!order.ok) throw new FallbackNeeded(order.reason);
    tail.previousCursor = order.last;
  }
  return afterPage(cp, page, list, zone);
}

/** After a complete read: the gaps re-read, then (a pull whose read wants it: pull/follow-up.ts) the follow-up. */
async function afterPages(
  ctx: RunContext,
  paged: Paged,
  query: ItemQuery,
  writer: PageWriter,
  checks: PageChecks,
  pagesBefore: number,
): Promise<AfterPages> {
  const { cp } = paged;
  const pagesRead = writer.nextPage - 1 - pagesBefore;
  const wanted = followUpWanted({ order: cp.plan.order, repeats: cp.watch.repeats, pagesRead, resumed: pagesBefore > 0 });
  const gaps = await rereadGaps(ctx, cp, query, writer, checks);
  const withGaps = { ...cp, received: cp.received + gaps.newIds };
  const catchUp = ctx.job === 'pull' && wanted ? await readFollowUp(ctx, withGaps, writer, checks, paged.followUpFirst) : null;
  return {
    cp: { ...withGaps, received: withGaps.received + (catchUp?.newIds ?? 0) },
    gapsUnresolved: gaps.unresolved,
    gapItems: gaps.items,
    catchUp: catchUp?.outcome ?? null,
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

/** Moves the writer's counters into the run's. */
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
