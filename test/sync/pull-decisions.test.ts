/** The pull's pure steps, table-driven: the plan of the window, the delete watch and the watermark decision. */
import { describe, expect, it } from 'vitest';
import { newWatch, observePage, skipSuspected, type WatchState } from '../../src/sync/pull/delete-watch.js';
import { planWindow, type PlanInput } from '../../src/sync/pull/plan.js';
import { decideWatermark } from '../../src/sync/pull/watermark.js';

const watch = (over: Partial<WatchState>): WatchState => ({ ...newWatch(), firstTotal: 100, lastTotal: 100, minTotal: 100, ...over });

describe('decideWatermark', () => {
  const previous = { watermark: '2026-03-01', highWater: '2026-03-01 10:00:00' };
  const cases: {
    name: string;
    input: Parameters<typeof decideWatermark>[0];
    want: { watermark: string | null; highWater: string | null; held: RegExp | null };
  }[] = [
    {
      name: 'newest-first, nothing deleted: both marks move',
      input: {
        job: 'pull',
        order: 'newest-first',
        startDate: '2026-03-02',
        previous,
        watch: watch({}),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { watermark: '2026-03-02', highWater: '2026-03-02 09:00:00', held: null },
    },
    {
      name: 'newest-first, TotalCount dropped below the first page: held',
      input: {
        job: 'pull',
        order: 'newest-first',
        startDate: '2026-03-02',
        previous,
        watch: watch({ minTotal: 99, lastTotal: 101 }),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { ...previous, held: /deleted/ },
    },
    {
      name: 'newest-first, creates and deletes that never drop the count: moves',
      input: {
        job: 'pull',
        order: 'newest-first',
        startDate: '2026-03-02',
        previous,
        watch: watch({ lastTotal: 102, decreaseSeen: true }),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { watermark: '2026-03-02', highWater: '2026-03-02 09:00:00', held: null },
    },
    {
      name: 'newest-first, an item served twice: held',
      input: {
        job: 'pull',
        order: 'newest-first',
        startDate: '2026-03-02',
        previous,
        watch: watch({ repeats: 1 }),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { ...previous, held: /two pages/ },
    },
    {
      name: 'newest-first, empty window: the high-water mark stays',
      input: { job: 'pull', order: 'newest-first', startDate: '2026-03-02', previous, watch: newWatch(), highWaterAtStart: null },
      want: { watermark: '2026-03-02', highWater: previous.highWater, held: null },
    },
    {
      name: 'a high-water mark never goes backwards',
      input: {
        job: 'pull',
        order: 'newest-first',
        startDate: '2026-03-02',
        previous,
        watch: watch({}),
        highWaterAtStart: '2026-03-01 09:59:00',
      },
      want: { watermark: '2026-03-02', highWater: previous.highWater, held: null },
    },
    {
      name: 'by-created, a create hides a delete: held',
      input: {
        job: 'pull',
        order: 'by-created',
        startDate: '2026-03-02',
        previous,
        watch: watch({ lastKeyAtStart: ['a', '1'], createdSeen: 1, lastTotal: 100 }),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { ...previous, held: /100 at the start \+ 1 created − 100/ },
    },
    {
      name: 'by-created, only creates: moves',
      input: {
        job: 'pull',
        order: 'by-created',
        startDate: '2026-03-02',
        previous,
        watch: watch({ lastKeyAtStart: ['a', '1'], createdSeen: 3, lastTotal: 103 }),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { watermark: '2026-03-02', highWater: '2026-03-02 09:00:00', held: null },
    },
    {
      name: 'by-created, the last key unknown (an old checkpoint) is not "everything is new"',
      input: {
        job: 'pull',
        order: 'by-created',
        startDate: '2026-03-02',
        previous,
        watch: watch({ createdSeen: 0 }),
        highWaterAtStart: null,
      },
      want: { watermark: '2026-03-02', highWater: previous.highWater, held: null },
    },
    {
      name: 'by-created, TotalCount went down: held',
      input: {
        job: 'pull',
        order: 'by-created',
        startDate: '2026-03-02',
        previous,
        watch: watch({ decreaseSeen: true, lastTotal: 99, minTotal: 99 }),
        highWaterAtStart: null,
      },
      want: { ...previous, held: /went down/ },
    },
    {
      name: 'a backfill never moves the marks',
      input: {
        job: 'backfill',
        order: 'by-created',
        startDate: '2026-03-02',
        previous,
        watch: watch({}),
        highWaterAtStart: '2026-03-02 09:00:00',
      },
      want: { ...previous, held: null },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = decideWatermark(c.input);
      expect({ watermark: d.watermark, highWater: d.highWater }).toEqual({ watermark: c.want.watermark, highWater: c.want.highWater });
      if (c.want.held) expect(d.held).toMatch(c.want.held);
      else expect(d.held).toBeNull();
    });
  }
});

describe('observePage', () => {
  it('counts items after the last key at the start as created, and a drop in TotalCount', () => {
    let w: WatchState = { ...newWatch(), lastKeyAtStart: ['2026-01-01 00:00:00', '100'] };
    w = observePage(w, {
      totalCount: 10,
      keys: [
        ['2026-01-01 00:00:00', '99'],
        ['2026-01-01 00:00:00', '101'],
      ],
      repeats: 0,
    });
    w = observePage(w, { totalCount: 9, keys: [['2026-01-02 00:00:00', '5']], repeats: 0 });
    expect(w).toMatchObject({ firstTotal: 10, lastTotal: 9, minTotal: 9, createdSeen: 2, decreaseSeen: true });
    expect(skipSuspected('by-created', w)).toMatch(/deleted/);
  });
});

describe('planWindow', () => {
  const base: PlanInput = {
    mode: { kind: 'incremental' },
    watermark: '2026-03-10',
    highWater: '2026-03-10 00:03:00',
    lookbackDays: 1,
    overlapMinutes: 5,
    zone: 'America/Los_Angeles',
    refill: false,
    cursorUnsortable: null,
  };
  it.each([
    [
      'newest first from the mark minus the overlap, across midnight',
      base,
      { order: 'newest-first', windowFrom: '2026-03-09', stopBefore: '2026-03-09 23:58:00', fallback: null },
    ],
    [
      'the first pull reads everything by Created',
      { ...base, watermark: null, highWater: null },
      { order: 'by-created', windowFrom: null, stopBefore: null, fallback: null },
    ],
    [
      'no high-water mark yet: the date window, and why',
      { ...base, highWater: null },
      { order: 'by-created', windowFrom: '2026-03-09', fallback: expect.stringMatching(/no high-water/) as unknown },
    ],
    [
      'an unsortable cursor: the date window, and why',
      { ...base, cursorUnsortable: 'not sortable' },
      { order: 'by-created', windowFrom: '2026-03-09', fallback: 'not sortable' },
    ],
    [
      'a mark that does not parse: the date window',
      { ...base, highWater: 'yesterday' },
      { order: 'by-created', fallback: expect.stringMatching(/does not parse/) as unknown },
    ],
    ['a refill reads everything', { ...base, refill: true }, { order: 'by-created', windowFrom: null }],
    [
      'a backfill reads its range by Created',
      { ...base, mode: { kind: 'backfill', from: '2026-01-01', to: '2026-01-31' } as const },
      { order: 'by-created', windowFrom: '2026-01-01', windowTo: '2026-01-31' },
    ],
  ] as [string, PlanInput, Record<string, unknown>][])('%s', (_name, input, want) => {
    expect(planWindow(input)).toMatchObject(want);
  });
});
