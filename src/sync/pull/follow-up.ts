/**
 * Pure: the follow-up rules (src/sync/pull.ts I3). The follow-up reads newest
 * first down to the run's start mark, so items edited or created while the
 * run paged are in the mirror when it ends and the high-water mark can move
 * to what it saw first. (test/sync/pull-follow-up.test.ts)
 */
import type { Item } from '../../platform/types.js';
import { startMarkMillis, type PullCheckpoint } from './checkpoint.js';
import { cursorMillis, type ReadOrder } from './plan.js';

export interface PagesRead {
  order: ReadOrder;
  /** Items the read saw on two pages. */
  repeats: number;
  /** Pages this attempt read. */
  pagesRead: number;
  /** The attempt resumed a killed one (its start mark is the first attempt's). */
  resumed: boolean;
}

/**
 * Whether the read ends with the follow-up: after a by-created read of more than one page, a
 * resumed read, or a newest-first read that saw items twice (the follow-up counts the moves that
 * explain them). A newest-first read with no repeats saw no move it must account for; its start
 * mark stands, and the next run reads what moved.
 */
export function followUpWanted(r: PagesRead): boolean {
  if (r.resumed) return true;
  if (r.pagesRead <= 1) return false;
  return r.order === 'by-created' || r.repeats > 0;
}

/**
 * Where the follow-up reads back to (the mark, or earlier when the first page may have been served
 * before it), or null when it cannot be read: the start mark is unknown or does not parse, or the
 * cursor cannot be read newest first (the run fell back).
 */
export function followUpSince(cp: PullCheckpoint, zone: string): { since: string; sinceMs: number } | null {
  if (cp.highWaterAtStart === null || cp.plan.fallback !== null || startMarkMillis(cp, zone) === undefined) return null;
  const since = cp.followUpFrom ?? cp.highWaterAtStart;
  const sinceMs = cursorMillis(since, zone);
  return sinceMs === undefined ? null : { since, sinceMs };
}

/**
 * Of a follow-up page, what to write: items modified since the mark (the rest the run's pages read as
 * they are now), and one whose time does not parse, as the safe side. `touched`: the IDs of those
 * modified since the mark, which moved to the front while the run paged.
 */
export function movedSince(
  items: readonly Item[],
  ids: readonly string[],
  sinceMs: number,
  cursorField: string,
  zone: string,
): { moved: Item[]; touched: string[] } {
  const moved: Item[] = [];
  const touched: string[] = [];
  items.forEach((item, i) => {
    const ms = cursorMillis(item[cursorField], zone);
    if (ms !== undefined && ms < sinceMs) return;
    moved.push(item);
    if (ms !== undefined) touched.push(ids[i]!);
  });
  return { moved, touched };
}
