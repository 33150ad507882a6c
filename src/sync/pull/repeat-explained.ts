/**
 * Pure: why, in by-created order, an ID served again is not a broken page
 * (src/sync/pull.ts I4): the item was modified in or after the run's start
 * mark's second (the mark has whole seconds), TotalCount moved between the two
 * pages (a delete or create shifted the slice), or the read is a date window,
 * which edits move items into (shifting the rest back).
 * (test/sync/pull-repeat-explained.test.ts)
 */
import type { Item } from '../../platform/types.js';
import { cursorMillis } from './plan.js';

/** Whether an item served again on a later page is explained by the list changing (by-created order). */
export type RepeatExplained = (item: Item, totalCount: number, previousTotal: number | undefined) => boolean;

export interface RepeatContext {
  /** The read is a date window. */
  windowed: boolean;
  /** The run's start mark in epoch ms, when known. */
  markMs: number | undefined;
  cursorField: string;
  zone: string;
}

export function repeatExplained(c: RepeatContext): RepeatExplained {
  return (item, total, previousTotal) => {
    if (c.windowed || (previousTotal !== undefined && total !== previousTotal)) return true;
    const ms = cursorMillis(item[c.cursorField], c.zone);
    return c.markMs !== undefined && ms !== undefined && ms >= c.markMs;
  };
}
