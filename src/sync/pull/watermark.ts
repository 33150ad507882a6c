/**
 * The watermark decision at the end of a complete read. Pure.
 *
 * - A backfill never moves the pull's marks.
 * - A pull whose read may have skipped an item (the delete watch) holds both
 *   marks: the next run reads the same window again.
 * - Otherwise the watermark becomes the platform date at which the run
 *   started, and the high-water mark the highest modification time the run
 *   can vouch for: the newest item's time when it started (asked before a
 *   by-created read, or the first item of a newest-first read). Items edited
 *   later carry a later time. It never goes backwards.
 */
import { skipSuspected, type WatchState } from './delete-watch.js';
import type { ReadOrder } from './plan.js';

export interface WatermarkInput {
  job: 'pull' | 'backfill';
  order: ReadOrder;
  startDate: string;
  previous: { watermark: string | null; highWater: string | null };
  watch: WatchState;
  /** The newest modification time when the run started, or null when unknown. */
  highWaterAtStart: string | null;
}

export interface WatermarkDecision {
  watermark: string | null;
  highWater: string | null;
  /** Why the marks stay, when they do. */
  held: string | null;
}

export function decideWatermark(i: WatermarkInput): WatermarkDecision {
  if (i.job === 'backfill') return { ...i.previous, held: null };
  const held = skipSuspected(i.order, i.watch);
  if (held) return { ...i.previous, held };
  const prev = i.previous.highWater;
  const highWater = i.highWaterAtStart === null ? prev : prev !== null && prev > i.highWaterAtStart ? prev : i.highWaterAtStart;
  return { watermark: i.startDate, highWater, held: null };
}
