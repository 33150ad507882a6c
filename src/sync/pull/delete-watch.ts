/**
 * The delete watch: signs, seen while a run pages, that an item may have been
 * skipped. It keeps only numbers (they travel in the checkpoint, so a resumed
 * run goes on watching from where the killed one was).
 *
 * - by-created order: items created while paging land after the last item
 *   that existed at the start (`lastKeyAtStart`, asked before paging), so
 *   creates never shift a page already read; a delete before the read
 *   position does. Deletes = TotalCount at the start + items seen after that
 *   key − TotalCount now. An unknown key (an old checkpoint) is "unknown":
 *   only a TotalCount that went down counts.
 * - newest-first order: creates and edits move items to the front, which
 *   repeats an item at a page boundary but never skips one; only a delete can
 *   shift an unread item onto a page already read, and it can only do so when
 *   TotalCount drops below the first page's. A repeated item is also held
 *   (the same answer from a server serving an item twice hides the item it
 *   displaced).
 */
import type { ReadOrder } from './plan.js';

export type SortKey = [string, string];

export interface WatchState {
  firstTotal: number;
  lastTotal: number;
  minTotal: number;
  decreaseSeen: boolean;
  /** by-created: the last item at the start; undefined = unknown, null = the window was empty. */
  lastKeyAtStart?: SortKey | null;
  createdSeen: number;
  repeats: number;
}

export const newWatch = (): WatchState => ({
  firstTotal: -1,
  lastTotal: -1,
  minTotal: -1,
  decreaseSeen: false,
  createdSeen: 0,
  repeats: 0,
});

/** Records one page (pure: returns the next state). */
export function observePage(w: WatchState, page: { totalCount: number; keys: readonly SortKey[]; repeats: number }): WatchState {
  const first = w.firstTotal < 0;
  const next: WatchState = {
    ...w,
    firstTotal: first ? page.totalCount : w.firstTotal,
    lastTotal: page.totalCount,
    minTotal: first ? page.totalCount : Math.min(w.minTotal, page.totalCount),
    decreaseSeen: w.decreaseSeen || (!first && page.totalCount < w.lastTotal),
    repeats: w.repeats + page.repeats,
  };
  if (w.lastKeyAtStart !== undefined) next.createdSeen += countAfter(page.keys, w.lastKeyAtStart);
  return next;
}

/** Why an item may have been skipped, or null. */
export function skipSuspected(order: ReadOrder, w: WatchState): string | null {
  if (w.firstTotal < 0) return null;
  if (order === 'newest-first') {
    if (w.minTotal < w.firstTotal)
      return `items were deleted on the platform while paging (TotalCount went from ${w.firstTotal} to ${w.minTotal})`;
    if (w.repeats > 0) return `${w.repeats} item(s) came back on two pages while paging`;
    return null;
  }
  if (w.decreaseSeen) return 'items were deleted on the platform while paging (TotalCount went down)';
  if (w.lastKeyAtStart !== undefined && w.firstTotal + w.createdSeen - w.lastTotal > 0) {
    return `items were deleted on the platform while paging (${w.firstTotal} at the start + ${w.createdSeen} created − ${w.lastTotal} at the end)`;
  }
  return null;
}

export function compareKeys(a: SortKey, b: SortKey): number {
  if (a[0] !== b[0]) return compareValues(a[0], b[0]);
  return compareValues(a[1], b[1]);
}

function compareValues(a: string, b: string): number {
  if (/^-?\d+$/.test(a) && /^-?\d+$/.test(b)) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (/^-?\d+(\.\d+)?$/.test(a) && /^-?\d+(\.\d+)?$/.test(b)) return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

function countAfter(keys: readonly SortKey[], key: SortKey | null): number {
  if (key === null) return keys.length;
  let n = 0;
  for (const k of keys) if (compareKeys(k, key) > 0) n++;
  return n;
}
