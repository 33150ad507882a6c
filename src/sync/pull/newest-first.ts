/**
 * Pure: the order check of a newest-first page. Every cursor value parses and
 * none is newer than the one before it, across pages; an item modified in or
 * after the second the run started (its start mark) may have been edited
 * while the run paged and served where the index still had it, so past the
 * first page it is not held to the order (the follow-up reads it). A page that
 * fails says why, and the run reads by the immutable sort field instead.
 * (test/sync/pull-newest-first.test.ts)
 */
import type { Item } from '../../platform/types.js';
import { cursorMillis, type ReadOrder } from './plan.js';

export type OrderCheck = { ok: true; last: number | undefined } | { ok: false; reason: string };

/** `before`: the last cursor instant of the pages before; `markMs`: the run's start mark. On success, the page's last. */
export function checkNewestFirst(
  page: { index: number; items: readonly Item[] },
  cursorField: string,
  zone: string,
  before: number | undefined,
  markMs: number | undefined,
): OrderCheck {
  let prev = before;
  for (const item of page.items) {
    const ms = cursorMillis(item[cursorField], zone);
    if (ms === undefined)
      return {
        ok: false,
        reason: `the cursor field ${cursorField} holds ${JSON.stringify(item[cursorField])}, not a date-time (page ${page.index})`,
      };
    if (markMs !== undefined && ms >= markMs && page.index > 1) continue;
    if (prev !== undefined && ms > prev) return { ok: false, reason: `page ${page.index} is not in newest-first order of ${cursorField}` };
    prev = ms;
  }
  return { ok: true, last: prev };
}

/**
 * Whether a read the platform refused (a query it would not take) starts again by the immutable
 * sort field: only a newest-first read, and only before it wrote a page (after one, the kept
 * checkpoint is where the next run resumes).
 */
export function fallsBackOnRefusal(order: ReadOrder, refused: boolean, pagesWritten: number): boolean {
  return order === 'newest-first' && refused && pagesWritten === 0;
}
