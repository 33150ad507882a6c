/**
 * Pure: whether a read that ended without error can be vouched for
 * (src/sync/pull.ts I1, I4). A newest-first read stops at its mark by design
 * and its pages are checked one by one; a by-created read must have received
 * as many distinct IDs as the platform counted, unless deletes under the read
 * explain fewer (the delete watch saw TotalCount fall; its gaps are re-read).
 * (test/sync/pull-completeness.test.ts)
 */
import type { WatchState } from './delete-watch.js';
import type { PullPlan } from './plan.js';

/** Why the read cannot be vouched for, or null. */
export function readIncomplete(plan: Pick<PullPlan, 'order' | 'windowFrom'>, watch: WatchState, received: number): string | null {
  if (plan.order !== 'by-created') return null;
  // A date window gains items edited into it meanwhile, some behind the read position (modified after the start:
  // the next run reads them); what it must have received is what it held at the start.
  const expected = plan.windowFrom !== null ? watch.firstTotal : watch.lastTotal;
  const unexplained = !watch.decreaseSeen && watch.minTotal >= watch.firstTotal;
  if (expected >= 0 && received < expected && unexplained) {
    return `incomplete read: received ${received} distinct IDs but the platform's TotalCount is ${expected}; the watermark stays`;
  }
  return null;
}
