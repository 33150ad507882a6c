/** The pull's checkpoint as a value each step returns: pull/checkpoint.ts and pull/read-order.ts, by table. */
import { describe, expect, it } from 'vitest';
import {
  afterPage,
  CHECKPOINT_VERSION,
  firstLoad,
  freshCheckpoint,
  isResumable,
  startOrResume,
  withStartAnswers,
  type PullCheckpoint,
  type PullMode,
} from '../../src/sync/pull/checkpoint.js';
import { newWatch } from '../../src/sync/pull/delete-watch.js';
import { cursorMillis, FULL_READ, type PlanInput, type PullPlan } from '../../src/sync/pull/plan.js';
import { readKey, sortKey } from '../../src/sync/pull/read-order.js';

const ZONE = 'UTC';
const LIST = { idField: 'ListDataID', sortField: 'Created', cursorField: 'Modified' };
const INCREMENTAL: PullMode = { kind: 'incremental' };
const BACKFILL: PullMode = { kind: 'backfill', from: '2026-01-01', to: '2026-01-31' };
const NEWEST: PullPlan = {
  order: 'newest-first',
  windowFrom: '2026-03-01',
  windowTo: null,
  stopBefore: '2026-03-01 23:50:00',
  fallback: null,
};
const backfillPlan: PullPlan = { ...FULL_READ, windowFrom: '2026-01-01', windowTo: '2026-01-31' };
const cp = (over: Partial<PullCheckpoint> = {}): PullCheckpoint => ({
  ...freshCheckpoint(INCREMENTAL, FULL_READ, '2026-03-02', 1),
  ...over,
});

describe('isResumable and firstLoad', () => {
  it.each([
    { name: 'no checkpoint', prev: null, mode: INCREMENTAL, resumable: false, first: { watermark: null, want: true } },
    {
      name: 'an incremental checkpoint, incremental run',
      prev: cp(),
      mode: INCREMENTAL,
      resumable: true,
      first: { watermark: null, want: false },
    },
    {
      name: 'a checkpoint of an older version is read afresh',
      prev: { ...cp(), version: 2 as unknown as typeof CHECKPOINT_VERSION },
      mode: INCREMENTAL,
      resumable: false,
      first: { watermark: null, want: true },
    },
    {
      name: 'a backfill checkpoint of the same range',
      prev: cp({ mode: 'backfill', plan: backfillPlan }),
      mode: BACKFILL,
      resumable: true,
      first: { watermark: null, want: false },
    },
    {
      name: 'a backfill checkpoint of another range',
      prev: cp({ mode: 'backfill', plan: { ...backfillPlan, windowTo: '2026-02-28' } }),
      mode: BACKFILL,
      resumable: false,
      first: { watermark: null, want: false },
    },
    {
      name: 'an incremental checkpoint for a backfill',
      prev: cp(),
      mode: BACKFILL,
      resumable: false,
      first: { watermark: null, want: false },
    },
    {
      name: 'nothing to resume after a successful pull: not a first load',
      prev: null,
      mode: INCREMENTAL,
      resumable: false,
      first: { watermark: '2026-03-01', want: false },
    },
  ])('$name', ({ prev, mode, resumable, first }) => {
    expect(isResumable(prev, mode)).toBe(resumable);
    expect(firstLoad(mode, { watermark: first.watermark, checkpoint: prev })).toBe(first.want);
  });
});

describe('startOrResume', () => {
  const planInput: PlanInput = {
    mode: INCREMENTAL,
    watermark: null,
    highWater: null,
    lookbackDays: 1,
    overlapMinutes: 10,
    zone: ZONE,
    refill: false,
    cursorUnsortable: null,
  };
  it('resumes the kept checkpoint as it is', () => {
    const kept = cp({ nextPage: 4, received: 300, runId: 9 });
    expect(startOrResume({ watermark: null, checkpoint: kept }, INCREMENTAL, planInput, '2026-03-03')).toEqual({ cp: kept, resumed: true });
  });
  it('starts a fresh one on the planned window, with no run yet and nothing watched', () => {
    const { cp: fresh, resumed } = startOrResume({ watermark: null, checkpoint: null }, INCREMENTAL, planInput, '2026-03-03');
    expect(resumed).toBe(false);
    expect(fresh).toEqual(freshCheckpoint(INCREMENTAL, FULL_READ, '2026-03-03', 0));
    expect(fresh.watch).toEqual(newWatch());
  });
});

describe('withStartAnswers', () => {
  it.each([
    {
      name: 'the last item and count at the start, the start mark',
      answers: { last: { items: [{ ListDataID: '42', Created: '2026-03-01 08:00:00' }], totalCount: 42 }, newest: '2026-03-02 10:00:00' },
      want: { lastKeyAtStart: ['2026-03-01 08:00:00', '42'], total: 42, mark: '2026-03-02 10:00:00', followUpFrom: null },
    },
    {
      name: 'an empty window: no last key, count 0, no mark',
      answers: { last: { items: [], totalCount: 0 }, newest: null },
      want: { lastKeyAtStart: null, total: 0, mark: null, followUpFrom: null },
    },
    {
      name: 'a first page asked beside the probes: the follow-up reads back further',
      answers: {
        last: { items: [{ ListDataID: '7', Created: 'x' }], totalCount: 7 },
        newest: '2026-03-02 10:00:00',
        followUpFrom: '2026-03-02 09:59:58',
      },
      want: { lastKeyAtStart: ['x', '7'], total: 7, mark: '2026-03-02 10:00:00', followUpFrom: '2026-03-02 09:59:58' },
    },
  ])('$name', ({ answers, want }) => {
    const before = cp();
    const after = withStartAnswers(before, answers, LIST);
    expect(after.watch).toMatchObject({
      lastKeyAtStart: want.lastKeyAtStart,
      firstTotal: want.total,
      lastTotal: want.total,
      minTotal: want.total,
    });
    expect([after.highWaterAtStart, after.followUpFrom]).toEqual([want.mark, want.followUpFrom]);
    expect(before).toEqual(cp());
  });
});

describe('afterPage', () => {
  const items = (...rows: [string, string, string][]) => rows.map(([ListDataID, Created, Modified]) => ({ ListDataID, Created, Modified }));
  it.each([
    {
      name: 'by-created: the watch counts the page, the IDs received grow by the new ones',
      start: cp({ received: 10 }),
      page: {
        index: 1,
        totalCount: 12,
        items: items(['1', 'c1', '2026-03-02 09:00:00'], ['2', 'c2', '2026-03-02 08:00:00']),
        ids: ['1', '2'],
        repeats: 0,
      },
      want: { received: 12, mark: null, firstTotal: 12, lastKey: ['c2', '2'] },
    },
    {
      name: 'repeats are not received twice',
      start: cp({ received: 10 }),
      page: {
        index: 2,
        totalCount: 12,
        items: items(['1', 'c1', '2026-03-02 09:00:00'], ['3', 'c3', '2026-03-02 08:00:00']),
        ids: ['1', '3'],
        repeats: 1,
      },
      want: { received: 11, mark: null, firstTotal: 12, lastKey: ['c3', '3'] },
    },
    {
      name: 'newest first, page 1, no mark yet: its first item gives the mark',
      start: cp({ plan: NEWEST }),
      page: {
        index: 1,
        totalCount: 2,
        items: items(['5', 'c5', '2026-03-02T10:00:00Z'], ['4', 'c4', '2026-03-02 09:00:00']),
        ids: ['5', '4'],
        repeats: 0,
      },
      want: { received: 2, mark: '2026-03-02 10:00:00', firstTotal: 2, lastKey: [String(cursorMillis('2026-03-02 09:00:00', ZONE)), '4'] },
    },
    {
      name: 'newest first with a mark already: kept',
      start: cp({ plan: NEWEST, highWaterAtStart: '2026-03-02 11:00:00' }),
      page: { index: 1, totalCount: 1, items: items(['5', 'c5', '2026-03-02 10:00:00']), ids: ['5'], repeats: 0 },
      want: { received: 1, mark: '2026-03-02 11:00:00', firstTotal: 1, lastKey: [String(cursorMillis('2026-03-02 10:00:00', ZONE)), '5'] },
    },
    {
      name: 'newest first, a later page never gives the mark',
      start: cp({ plan: NEWEST }),
      page: { index: 2, totalCount: 1, items: items(['5', 'c5', '2026-03-02 10:00:00']), ids: ['5'], repeats: 0 },
      want: { received: 1, mark: null, firstTotal: 1, lastKey: [String(cursorMillis('2026-03-02 10:00:00', ZONE)), '5'] },
    },
  ])('$name', ({ start, page, want }) => {
    const snapshot = structuredClone(start);
    const next = afterPage(start, page, LIST, ZONE);
    expect(next.received).toBe(want.received);
    expect(next.highWaterAtStart).toBe(want.mark);
    expect(next.watch.firstTotal).toBe(want.firstTotal);
    expect(next.watch.lastPage?.lastKey).toEqual(want.lastKey);
    expect(start).toEqual(snapshot);
  });
});

describe('readKey', () => {
  const item = { ListDataID: '9', Created: '2026-01-01 00:00:00', Modified: '2026-03-02 10:00:00' };
  it.each([
    { order: 'by-created' as const, want: ['2026-01-01 00:00:00', '9'] },
    { order: 'newest-first' as const, want: [String(cursorMillis('2026-03-02 10:00:00', ZONE)), '9'] },
  ])('$order', ({ order, want }) => {
    expect(readKey(LIST, ZONE, order)(item)).toEqual(want);
  });
  it('by-created keys are sort keys', () => expect(readKey(LIST, ZONE, 'by-created')(item)).toEqual(sortKey(item, LIST)));
});
