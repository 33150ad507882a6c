/** The pull's pure steps, table-driven: the plan of the window, the delete watch and the watermark decision. */
import { describe, expect, it } from 'vitest';
import type { Item } from '../../src/platform/types.js';
import {
  compareKeys,
  newWatch,
  observePage,
  readOrderCompare,
  type Gap,
  type SortKey,
  type WatchState,
} from '../../src/sync/pull/delete-watch.js';
import { coverGap, MAX_PAGES_A_GAP, readGaps } from '../../src/sync/pull/gap-read.js';
import { PageChecks } from '../../src/sync/pull/page-reader.js';
import { cursorMillis, planWindow, type PlanInput } from '../../src/sync/pull/plan.js';
import { tryParsePlatformDateTime } from '../../src/platform/dates.js';
import { fromPlatform } from '../../src/mirror/convert.js';
import { decideWatermark } from '../../src/sync/pull/watermark.js';

const watch = (over: Partial<WatchState>): WatchState => ({ ...newWatch(), firstTotal: 100, lastTotal: 100, minTotal: 100, ...over });
const gap = (drop: number): Gap => ({ after: 1, a: ['a', '1'], b: ['b', '2'], drop });

describe('decideWatermark', () => {
  const previous = { watermark: '2026-03-01', highWater: '2026-03-01 10:00:00' };
  const base = {
    job: 'pull' as const,
    order: 'newest-first' as const,
    startDate: '2026-03-02',
    previous,
    watch: watch({}),
    highWaterAtStart: '2026-03-02 09:00:00',
    gapsUnresolved: null,
    catchUp: null,
  };
  const moved = { watermark: '2026-03-02', highWater: '2026-03-02 09:00:00', held: null };
  const cases: {
    name: string;
    input: Partial<Parameters<typeof decideWatermark>[0]>;
    want: { watermark: string | null; highWater: string | null; held: RegExp | null };
  }[] = [
    { name: 'newest-first, nothing deleted: both marks move', input: {}, want: moved },
    {
      name: 'TotalCount fell and the gap was re-read: the marks move (deletes do not hold them)',
      input: { watch: watch({ minTotal: 99, lastTotal: 99, gaps: [gap(99)] }) },
      want: moved,
    },
    {
      name: 'a gap that could not be re-read: held, and why',
      input: { watch: watch({ gaps: [gap(99)] }), gapsUnresolved: 'pages around it did not cover the gap' },
      want: { ...previous, held: /did not cover/ },
    },
    {
      name: 'newest-first, items served twice, as many moved to the front meanwhile: moves to what the follow-up saw first',
      input: { watch: watch({ repeats: 3 }), catchUp: { newest: '2026-03-02 09:05:00', touched: 3, clean: true } },
      want: { watermark: '2026-03-02', highWater: '2026-03-02 09:05:00', held: null },
    },
    {
      name: 'newest-first, more repeats than moves: held',
      input: { watch: watch({ repeats: 2 }), catchUp: { newest: '2026-03-02 09:05:00', touched: 1, clean: true } },
      want: { ...previous, held: /2 item\(s\) came back on two pages.*only 1 moved/ },
    },
    {
      name: 'a follow-up whose own pages lost a count: the mark is the run start, not what it saw',
      input: { catchUp: { newest: '2026-03-02 09:05:00', touched: 0, clean: false } },
      want: moved,
    },
    {
      name: 'newest-first, empty window: the high-water mark stays',
      input: { watch: newWatch(), highWaterAtStart: null },
      want: { watermark: '2026-03-02', highWater: previous.highWater, held: null },
    },
    {
      name: 'a high-water mark never goes backwards',
      input: { highWaterAtStart: '2026-03-01 09:59:00' },
      want: { ...moved, highWater: previous.highWater },
    },
    {
      name: 'by-created, a create hides a delete (no drop seen between pages): held',
      input: { order: 'by-created', watch: watch({ lastKeyAtStart: ['a', '1'], createdSeen: 1, lastTotal: 100 }) },
      want: { ...previous, held: /100 at the start \+ 1 created − 100/ },
    },
    {
      name: 'by-created, deletes all seen as drops between pages (gaps re-read): moves',
      input: { order: 'by-created', watch: watch({ lastKeyAtStart: ['a', '1'], createdSeen: 1, lastTotal: 99, gaps: [gap(1), gap(1)] }) },
      want: moved,
    },
    {
      name: 'by-created, only creates: moves',
      input: { order: 'by-created', watch: watch({ lastKeyAtStart: ['a', '1'], createdSeen: 3, lastTotal: 103 }) },
      want: moved,
    },
    {
      name: 'by-created, the last key unknown (an old checkpoint) is not "everything is new"',
      input: { order: 'by-created', watch: watch({ createdSeen: 0 }), highWaterAtStart: null },
      want: { watermark: '2026-03-02', highWater: previous.highWater, held: null },
    },
    {
      name: 'by-created, last key unknown, TotalCount went down with no gap recorded: held',
      input: { order: 'by-created', watch: watch({ decreaseSeen: true, lastTotal: 99, minTotal: 99 }), highWaterAtStart: null },
      want: { ...previous, held: /went down/ },
    },
    { name: 'a backfill never moves the marks', input: { job: 'backfill', order: 'by-created' }, want: { ...previous, held: null } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = decideWatermark({ ...base, ...c.input });
      expect({ watermark: d.watermark, highWater: d.highWater }).toEqual({ watermark: c.want.watermark, highWater: c.want.highWater });
      if (c.want.held) expect(d.held).toMatch(c.want.held);
      else expect(d.held).toBeNull();
    });
  }
});

describe('observePage', () => {
  const page = (index: number, totalCount: number, keys: SortKey[]) => ({
    index,
    totalCount,
    keys,
    first: keys[0],
    last: keys[keys.length - 1],
    repeats: 0,
  });
  it('counts items after the last key at the start as created; a drop in TotalCount between pages records the gap', () => {
    let w: WatchState = { ...newWatch(), lastKeyAtStart: ['2026-01-01 00:00:00', '100'] };
    w = observePage(
      w,
      page(1, 10, [
        ['2026-01-01 00:00:00', '99'],
        ['2026-01-01 00:00:00', '101'],
      ]),
    );
    w = observePage(w, page(2, 9, [['2026-01-02 00:00:00', '5']]));
    expect(w).toMatchObject({ firstTotal: 10, lastTotal: 9, minTotal: 9, createdSeen: 2, decreaseSeen: true });
    expect(w.gaps).toEqual([{ after: 1, a: ['2026-01-01 00:00:00', '101'], b: ['2026-01-02 00:00:00', '5'], drop: 1 }]);
  });
  it('a rise or a steady count records no gap; a page after a resume is compared with the checkpointed last page', () => {
    let w = observePage(newWatch(), page(4, 10, [['a', '1']]));
    w = observePage(w, page(5, 11, [['b', '2']]));
    w = observePage(w, page(6, 11, [['c', '3']]));
    expect(w.gaps).toEqual([]);
    const resumed = observePage(JSON.parse(JSON.stringify(w)) as WatchState, page(7, 8, [['d', '4']]));
    expect(resumed.gaps).toEqual([{ after: 6, a: ['c', '3'], b: ['d', '4'], drop: 3 }]);
  });
});

describe('coverGap', () => {
  const item = (k: number): Item => ({ ListDataID: String(k), Created: 'x' });
  const keyOf = (it: Item): SortKey => ['x', String(it.ListDataID)];
  const g: Gap = { after: 3, a: ['x', '10'], b: ['x', '14'], drop: 2 };
  const slice = (firstIndex: number, ids: number[], reachesEnd = false) => ({ firstIndex, items: ids.map(item), reachesEnd });
  it('the items strictly between the two keys, when the slice reaches both', () => {
    const c = coverGap(g, slice(3, [8, 9, 11, 12, 13, 15]), keyOf, compareKeys);
    expect(c).toEqual({ covered: true, inside: [item(11), item(12), item(13)] });
  });
  it('a slice that starts after the first key needs the page before; one that stops short, the page after', () => {
    expect(coverGap(g, slice(3, [11, 12, 15]), keyOf, compareKeys)).toEqual({ covered: false, need: 'before' });
    expect(coverGap(g, slice(3, [9, 11, 12]), keyOf, compareKeys)).toEqual({ covered: false, need: 'after' });
  });
  it('the list start and the list end close a slice; an open gap runs to the end', () => {
    expect(coverGap(g, slice(1, [11, 12, 15]), keyOf, compareKeys)).toMatchObject({ covered: true });
    expect(coverGap(g, slice(3, [9, 11], true), keyOf, compareKeys)).toEqual({ covered: true, inside: [item(11)] });
    expect(coverGap({ ...g, b: null }, slice(3, [9, 11, 20], true), keyOf, compareKeys)).toEqual({
      covered: true,
      inside: [item(11), item(20)],
    });
  });
  it('newest-first keys compare in read order (descending)', () => {
    const desc: Gap = { after: 1, a: ['500', '1'], b: ['300', '1'], drop: 1 };
    const byTime = (it: Item): SortKey => [String(it.ListDataID), '1'];
    const c = coverGap(desc, slice(2, [600, 400, 300]), byTime, readOrderCompare('newest-first'));
    expect(c).toEqual({ covered: true, inside: [item(400)] });
  });
});

describe('readGaps', () => {
  // Page i holds items i*10 and i*10+1: a slice by position, as the platform serves it now.
  const keyOf = (it: Item): SortKey => ['x', String(it.ListDataID)];
  const asked: number[] = [];
  const fetch = (i: number) => {
    asked.push(i);
    return Promise.resolve([{ ListDataID: String(i * 10) }, { ListDataID: String(i * 10 + 1) }]);
  };
  it('asks the page before the boundary, then the pages after it until the gap is covered, and returns what lies inside', async () => {
    asked.length = 0;
    const found = await readGaps([{ after: 2, a: ['x', '21'], b: ['x', '40'], drop: 2 }], fetch, 2, keyOf, compareKeys);
    expect(asked).toEqual([2, 3, 4]);
    expect(found).toEqual({ items: [{ ListDataID: '30' }, { ListDataID: '31' }], unresolved: null });
  });
  it(`reports a gap that ${MAX_PAGES_A_GAP} pages do not cover`, async () => {
    asked.length = 0;
    const far = await readGaps([{ after: 2, a: ['x', '21'], b: ['x', '60'], drop: 1 }], fetch, 2, keyOf, compareKeys);
    expect(asked).toHaveLength(MAX_PAGES_A_GAP);
    expect(far.unresolved).toMatch(/after page 2.*did not cover/);
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

describe('PageChecks: an ID served twice in by-created order', () => {
  const page = (ids: number[], totalCount: number) => ({ items: ids.map((id) => ({ ListDataID: String(id) })), totalCount });
  it('fails the page unless the run can see why: here, the count moved between the two pages', () => {
    const checks = new PageChecks('ListDataID', 2, 'by-created', (_item, total, previousTotal) => total !== previousTotal);
    expect(checks.verify(page([1, 2], 5), 1)).toBeNull();
    checks.accept(page([1, 2], 5).items, 5);
    expect(checks.verify(page([2, 3], 5), 2)).toMatch(/ID 2 was already served on an earlier page/);
    expect(checks.verify(page([2, 3], 6), 2)).toBeNull();
    expect(checks.accept(page([2, 3], 6).items, 6)).toEqual({ ids: ['2', '3'], repeats: 1 });
  });
  it('newest first counts repeats and does not fail the page', () => {
    const checks = new PageChecks('ListDataID', 2, 'newest-first');
    checks.accept(page([1, 2], 5).items, 5);
    expect(checks.verify(page([2, 3], 5), 2)).toBeNull();
  });
});

describe('cursorMillis', () => {
  it('gives the instant luxon gives for every form a cursor comes in, across DST changes and in fixed offsets', () => {
    const texts = [
      '2026-11-24 10:15:30',
      '2026-11-24',
      '2026-11-24T10:15:30',
      '2026-11-24T10:15:30.250',
      '2026-11-24T10:15:30Z',
      '2026-11-24T10:15:30+05:30',
      '2026-11-24T10:15:30-08:00',
      '2026-03-08 02:30:00', // inside New York's spring-forward gap
      '2026-03-29 02:30:00', // inside Berlin's gap
      '1999-12-31 23:59:59',
      '2026-02-28 00:00:00',
    ];
    for (const zone of ['UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Shanghai', 'Australia/Lord_Howe']) {
      for (const t of texts) expect([zone, t, cursorMillis(t, zone)]).toEqual([zone, t, tryParsePlatformDateTime(t, zone)!.toMillis()]);
    }
  });

  it("reads an hour that happens twice (DST ends) as the mirror's timestamp column does, whatever the date today", () => {
    // luxon's answer there depends on the offset the zone has today; a cursor compared item by item must not.
    for (const [zone, t, first, second] of [
      ['America/New_York', '2026-11-01 01:30:00', '2026-11-01T01:30:00-04:00', '2026-11-01T01:30:00-05:00'],
      ['Europe/Berlin', '2026-10-25 02:30:00', '2026-10-25T02:30:00+02:00', '2026-10-25T02:30:00+01:00'],
    ] as const) {
      const ms = cursorMillis(t, zone);
      expect([Date.parse(first), Date.parse(second)]).toContain(ms);
      expect(ms).toBe((fromPlatform('timestamptz', t, zone) as { value: Date }).value.getTime());
    }
  });

  it('is undefined for what does not parse, as luxon says', () => {
    for (const v of ['', 'yesterday', '2026-13-01 00:00:00', '2026-02-30', '2026-11-24 25:00:00', null, 17, undefined])
      expect([v, cursorMillis(v, 'Europe/Berlin')]).toEqual([v, undefined]);
  });
});
