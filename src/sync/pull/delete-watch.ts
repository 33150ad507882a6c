/**
 * The delete watch: where, while a run pages, an item may have slid past a
 * page boundary unread. It keeps only numbers and a few keys (they travel in
 * the checkpoint, so a resumed run goes on watching from where the killed one
 * was, and re-reads the gaps a killed run had found).
 *
 * A page is a slice by position. Only a delete before the read position moves
 * unread items forward, onto positions already read; creates and edits move
 * items back (an item comes twice, never goes missing) or to the end. So an
 * item can be skipped only at a boundary between two pages where the later
 * page was served after such a delete, and then TotalCount seen by the later
 * page is lower than the earlier page's (a create may hide that in by-created
 * order; the balance at the end catches it). Such a boundary is a `Gap`: the
 * items strictly between the last key of the page before it and the first key
 * of the page after it are the ones that may have been skipped; the pull
 * re-reads exactly those (pull/gap-read.ts) instead of holding its marks.
 *
 * - by-created order: items created while paging land after the last item
 *   that existed at the start (`lastKeyAtStart`, asked before paging). Deletes
 *   = TotalCount at the start + items seen after that key − TotalCount now;
 *   more deletes than the gaps' drops add up to means a create hid a drop.
 * - newest-first order: an item edited or created while paging moves to the
 *   front, which can only shift others back; in that order a skip always
 *   shows as a drop (a move to the front raises TotalCount at most by one per
 *   item it shifts back).
 */
import type { ReadOrder } from './plan.js';

export type SortKey = [string, string];

/** A page boundary where TotalCount went down: items between `a` and `b` (read order, exclusive) may be unread. */
export interface Gap {
  /** The page before the boundary. */
  after: number;
  a: SortKey;
  /** The first key of the page after it; null when that page was empty (the gap runs to the end). */
  b: SortKey | null;
  drop: number;
}

export interface WatchState {
  firstTotal: number;
  lastTotal: number;
  minTotal: number;
  decreaseSeen: boolean;
  /** by-created: the last item at the start; undefined = unknown, null = the window was empty. */
  lastKeyAtStart?: SortKey | null;
  createdSeen: number;
  repeats: number;
  /** The page read last: its index, TotalCount and last key in read order. */
  lastPage: { index: number; total: number; lastKey: SortKey } | null;
  gaps: Gap[];
}

export const newWatch = (): WatchState => ({
  firstTotal: -1,
  lastTotal: -1,
  minTotal: -1,
  decreaseSeen: false,
  createdSeen: 0,
  repeats: 0,
  lastPage: null,
  gaps: [],
});

export interface ObservedPage {
  index: number;
  totalCount: number;
  /** by-created keys of the page's items (counted against `lastKeyAtStart`). */
  keys: readonly SortKey[];
  /** The page's first and last keys in read order (undefined on an empty page). */
  first: SortKey | undefined;
  last: SortKey | undefined;
  repeats: number;
}

/** Records one page (pure: returns the next state). */
export function observePage(w: WatchState, page: ObservedPage): WatchState {
  const first = w.firstTotal < 0;
  const next: WatchState = {
    ...w,
    firstTotal: first ? page.totalCount : w.firstTotal,
    lastTotal: page.totalCount,
    minTotal: first ? page.totalCount : Math.min(w.minTotal, page.totalCount),
    decreaseSeen: w.decreaseSeen || (!first && page.totalCount < w.lastTotal),
    repeats: w.repeats + page.repeats,
    lastPage: page.last ? { index: page.index, total: page.totalCount, lastKey: page.last } : w.lastPage,
    gaps: w.gaps,
  };
  const before = w.lastPage;
  if (before && before.index === page.index - 1 && page.totalCount < before.total) {
    next.gaps = [...w.gaps, { after: before.index, a: before.lastKey, b: page.first ?? null, drop: before.total - page.totalCount }];
  }
  if (w.lastKeyAtStart !== undefined) next.createdSeen += countAfter(page.keys, w.lastKeyAtStart);
  return next;
}

/**
 * Deletes the gaps cannot account for, or null. by-created: a create between
 * two pages can hide a drop; then more items went than the drops add up to.
 */
export function hiddenDeletes(order: ReadOrder, w: WatchState): string | null {
  if (w.firstTotal < 0 || order !== 'by-created') return null;
  const dropped = w.gaps.reduce((n, g) => n + g.drop, 0);
  if (w.lastKeyAtStart === undefined) {
    return w.decreaseSeen && dropped === 0 ? 'items were deleted on the platform while paging (TotalCount went down)' : null;
  }
  const deleted = w.firstTotal + w.createdSeen - w.lastTotal;
  if (deleted > dropped) {
    return `items were deleted on the platform while paging where creates hid the drop (${w.firstTotal} at the start + ${w.createdSeen} created − ${w.lastTotal} at the end, ${dropped} seen between pages)`;
  }
  return null;
}

export function compareKeys(a: SortKey, b: SortKey): number {
  if (a[0] !== b[0]) return compareValues(a[0], b[0]);
  return compareValues(a[1], b[1]);
}

/** Compares two keys in the order a read serves them: ascending by-created, descending newest first. */
export function readOrderCompare(order: ReadOrder): (a: SortKey, b: SortKey) => number {
  return order === 'by-created' ? compareKeys : (a, b) => compareKeys(b, a);
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
