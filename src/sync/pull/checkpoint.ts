/**
 * Pure: the pull's checkpoint, the run's accounting that travels with every
 * committed page (src/sync/pull.ts I5), and how each step makes the next one
 * from it: a fresh or resumed start, the start answers, a page read. Every
 * function returns a new checkpoint; none changes the one it is given.
 */
import type { ListConfig } from '../../config.js';
import type { Item } from '../../platform/types.js';
import { newWatch, type WatchState } from './delete-watch.js';
import { cursorMillis, cursorText, planWindow, type PlanInput, type PullPlan } from './plan.js';
import { sortKey, watchPage, type WatchedPage } from './read-order.js';

export type PullMode = { kind: 'incremental' } | { kind: 'backfill'; from: string; to?: string };

export const CHECKPOINT_VERSION = 3;

export interface PullCheckpoint {
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

/** What the sync state holds for the job. */
export interface KeptState {
  watermark: string | null;
  checkpoint: PullCheckpoint | null;
}

export function freshCheckpoint(mode: PullMode, plan: PullPlan, startDate: string, runId: number): PullCheckpoint {
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

/** A checkpoint this run can go on from: same version and mode, and for a backfill the same range. */
export function isResumable(prev: PullCheckpoint | null, mode: PullMode): prev is PullCheckpoint {
  if (!prev || prev.version !== CHECKPOINT_VERSION || prev.mode !== mode.kind) return false;
  return mode.kind === 'incremental' || (prev.plan.windowFrom === mode.from && prev.plan.windowTo === (mode.to ?? null));
}

/** A pull that has never succeeded and has nothing to resume: its first requests need not wait for the fields. */
export function firstLoad(mode: PullMode, state: KeptState): boolean {
  return mode.kind === 'incremental' && state.watermark === null && !isResumable(state.checkpoint, mode);
}

/** The kept checkpoint when it can be resumed, else a fresh one on the planned window. */
export function startOrResume(
  state: KeptState,
  mode: PullMode,
  planInput: PlanInput,
  startDate: string,
): { cp: PullCheckpoint; resumed: boolean } {
  if (isResumable(state.checkpoint, mode)) return { cp: state.checkpoint, resumed: true };
  return { cp: freshCheckpoint(mode, planWindow(planInput), startDate, 0), resumed: false };
}

/** The run's start mark (the newest modification time when it started) in epoch ms, when known. */
export function startMarkMillis(cp: PullCheckpoint, zone: string): number | undefined {
  return cp.highWaterAtStart === null ? undefined : cursorMillis(cp.highWaterAtStart, zone);
}

/** What a by-created read asks before its pages (pull/start.ts). */
export interface StartFacts {
  last: { items: readonly Item[]; totalCount: number };
  newest: string | null;
  followUpFrom?: string;
}

/** The checkpoint once the start answers are known: the last item and count at the start, the start mark. */
export function withStartAnswers(cp: PullCheckpoint, answers: StartFacts, list: Pick<ListConfig, 'sortField' | 'idField'>): PullCheckpoint {
  const lastItem = answers.last.items[0];
  const total = answers.last.totalCount;
  return {
    ...cp,
    watch: {
      ...cp.watch,
      lastKeyAtStart: lastItem ? sortKey(lastItem, list) : null,
      firstTotal: total,
      lastTotal: total,
      minTotal: total,
    },
    highWaterAtStart: answers.newest,
    followUpFrom: answers.followUpFrom ?? null,
  };
}

/** A page the read believed. */
export interface ReadPage extends WatchedPage {
  ids: readonly string[];
}

/**
 * The checkpoint after a page: the delete watch and the distinct IDs received; a newest-first read takes
 * its start mark from its first item when it has none (the page's order was checked before).
 */
export function afterPage(
  cp: PullCheckpoint,
  page: ReadPage,
  list: Pick<ListConfig, 'sortField' | 'idField' | 'cursorField'>,
  zone: string,
): PullCheckpoint {
  const order = cp.plan.order;
  const first = page.items[0];
  const takesMark = order === 'newest-first' && page.index === 1 && cp.highWaterAtStart === null && first !== undefined;
  return {
    ...cp,
    highWaterAtStart: takesMark ? cursorText(String(first[list.cursorField]), zone) : cp.highWaterAtStart,
    watch: watchPage(cp.watch, page, list, zone, order),
    received: cp.received + page.ids.length - page.repeats,
  };
}
