/**
 * The watermark decision at the end of a complete read. Pure.
 *
 * - A backfill never moves the pull's marks.
 * - The marks stay (the next run reads the same window again) only when the
 *   read cannot vouch for itself: a gap the delete watch found could not be
 *   re-read, deletes the gaps do not account for (creates hid a drop), or, in
 *   newest-first order, more items came twice than moved to the front during
 *   the run (each move shifts one item back; anything more is a server
 *   serving an item in place of another).
 * - Otherwise the watermark becomes the platform date at which the run
 *   started, and the high-water mark the highest modification time the run
 *   can vouch for: the newest item's time when the follow-up read (newest
 *   first down to the run's start) began, when there was one and its pages
 *   held together; else the newest item's time when the run started (asked
 *   before a by-created read, or the first item of a newest-first read).
 *   Items edited later carry a later time. It never goes backwards.
 */
import { hiddenDeletes, type WatchState } from './delete-watch.js';
import type { ReadOrder } from './plan.js';

export interface CatchUpOutcome {
  /** The newest modification time the follow-up read saw first, or null when it read nothing. */
  newest: string | null;
  /** Distinct items modified after the run's start mark (they moved to the front while the run paged). */
  touched: number;
  /** False when TotalCount fell between its own pages: it vouches for nothing beyond the run's start. */
  clean: boolean;
}

export interface WatermarkInput {
  job: 'pull' | 'backfill';
  order: ReadOrder;
  startDate: string;
  previous: { watermark: string | null; highWater: string | null };
  watch: WatchState;
  /** The newest modification time when the run started, or null when unknown. */
  highWaterAtStart: string | null;
  /** Why a gap could not be re-read, or null. */
  gapsUnresolved: string | null;
  /** The follow-up read, or null when none was made (a one-page read is one snapshot). */
  catchUp: CatchUpOutcome | null;
}

export interface WatermarkDecision {
  watermark: string | null;
  highWater: string | null;
  /** Why the marks stay, when they do. */
  held: string | null;
}

export function decideWatermark(i: WatermarkInput): WatermarkDecision {
  if (i.job === 'backfill') return { ...i.previous, held: null };
  const held = i.gapsUnresolved ?? hiddenDeletes(i.order, i.watch) ?? unexplainedRepeats(i);
  if (held) return { ...i.previous, held };
  const vouched = i.catchUp?.clean && i.catchUp.newest !== null ? i.catchUp.newest : i.highWaterAtStart;
  const prev = i.previous.highWater;
  const highWater = vouched === null ? prev : prev !== null && prev > vouched ? prev : vouched;
  return { watermark: i.startDate, highWater, held: null };
}

/** newest-first: repeats beyond the items that moved to the front while the run paged. */
function unexplainedRepeats(i: WatermarkInput): string | null {
  if (i.order !== 'newest-first' || i.watch.repeats === 0) return null;
  const moved = i.catchUp?.touched ?? 0;
  if (i.watch.repeats <= moved) return null;
  return `${i.watch.repeats} item(s) came back on two pages while paging, but only ${moved} moved to the front meanwhile`;
}
