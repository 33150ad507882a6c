/** When a read that ended without error can be vouched for: pull/completeness.ts, by table. */
import { describe, expect, it } from 'vitest';
import { readIncomplete } from '../../src/sync/pull/completeness.js';
import { newWatch, type WatchState } from '../../src/sync/pull/delete-watch.js';
import type { PullPlan } from '../../src/sync/pull/plan.js';

const watch = (over: Partial<WatchState>): WatchState => ({ ...newWatch(), firstTotal: 100, lastTotal: 100, minTotal: 100, ...over });
const full: Pick<PullPlan, 'order' | 'windowFrom'> = { order: 'by-created', windowFrom: null };
const window: Pick<PullPlan, 'order' | 'windowFrom'> = { order: 'by-created', windowFrom: '2026-03-01' };
const newest: Pick<PullPlan, 'order' | 'windowFrom'> = { order: 'newest-first', windowFrom: '2026-03-01' };

describe('readIncomplete', () => {
  it.each([
    { name: 'every ID the platform counts: complete', plan: full, w: watch({}), received: 100, want: null },
    {
      name: 'more IDs than counted (creates during the run): complete',
      plan: full,
      w: watch({ lastTotal: 101 }),
      received: 103,
      want: null,
    },
    {
      name: 'fewer IDs than counted, nothing deleted: incomplete, naming both numbers',
      plan: full,
      w: watch({}),
      received: 98,
      want: /received 98 distinct IDs but the platform's TotalCount is 100; the watermark stays/,
    },
    {
      name: 'a full read is held to the count at its end (creates raised it)',
      plan: full,
      w: watch({ lastTotal: 105 }),
      received: 100,
      want: /TotalCount is 105/,
    },
    {
      name: 'a date window is held to the count at its start (edits move items into it)',
      plan: window,
      w: watch({ lastTotal: 105 }),
      received: 100,
      want: null,
    },
    {
      name: 'a date window that received fewer than it held at the start',
      plan: window,
      w: watch({ lastTotal: 105 }),
      received: 99,
      want: /TotalCount is 100/,
    },
    {
      name: 'TotalCount fell between pages (deletes): the gaps account for it',
      plan: full,
      w: watch({ decreaseSeen: true, lastTotal: 97 }),
      received: 96,
      want: null,
    },
    {
      name: 'the lowest count fell below the first: deletes explain fewer IDs',
      plan: full,
      w: watch({ minTotal: 98 }),
      received: 98,
      want: null,
    },
    { name: 'no count seen (no page read)', plan: full, w: newWatch(), received: 0, want: null },
    { name: 'newest first stops at its mark by design: never judged by the count', plan: newest, w: watch({}), received: 3, want: null },
  ])('$name', ({ plan, w, received, want }) => {
    const got = readIncomplete(plan, w, received);
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatch(want);
  });
});
