/**
 * Reconcile's pure steps, table-driven and without a database: what a count
 * difference calls for (agree, sweep, split), the span the search splits, the
 * mirror's day counts, when a sweep's answer is refused and what the run says
 * then, and which IDs an `In` lookup may send.
 */
import { describe, expect, it } from 'vitest';
import { Operator } from '../../src/platform/types.js';
import {
  countSpan,
  DayCounts,
  describeRange,
  nextStep,
  rangeFilters,
  type DayRange,
  type RangeStep,
} from '../../src/sync/reconcile/counts.js';
import { lookupIds } from '../../src/sync/reconcile/heal.js';
import { pageAnomalies, rangeAnomaly, refusal, sweepFailure, totalCountTolerance } from '../../src/sync/reconcile/refusal.js';

const r = (from: string | null, to: string | null): DayRange => ({ from, to });
const SPAN = { from: '2026-01-01', to: '2026-01-11' };

describe('nextStep: what a range whose counts were asked calls for', () => {
  const cases: { name: string; range: DayRange; platform: number; mirror: number; pageSize?: number; want: RangeStep }[] = [
    { name: 'counts agree', range: r(null, null), platform: 5000, mirror: 5000, want: { kind: 'agree' } },
    { name: 'counts agree at zero', range: r('2026-01-03', '2026-01-04'), platform: 0, mirror: 0, want: { kind: 'agree' } },
    { name: 'one day differs: sweep it', range: r('2026-01-03', '2026-01-04'), platform: 5000, mirror: 4999, want: { kind: 'sweep' } },
    {
      name: 'a page of items differs: sweep it',
      range: r('2026-01-01', '2026-01-09'),
      platform: 1000,
      mirror: 1001,
      want: { kind: 'sweep' },
    },
    { name: 'a platform count of 0 against mirror rows: sweep', range: r(null, null), platform: 0, mirror: 7, want: { kind: 'sweep' } },
    {
      name: 'the whole list differs: split at the span’s middle day, open ends kept',
      range: r(null, null),
      platform: 5000,
      mirror: 5001,
      want: { kind: 'split', left: r(null, '2026-01-06'), right: r('2026-01-06', null) },
    },
    {
      name: 'a closed range of two days splits into its days',
      range: r('2026-01-03', '2026-01-05'),
      platform: 3000,
      mirror: 2990,
      want: { kind: 'split', left: r('2026-01-03', '2026-01-04'), right: r('2026-01-04', '2026-01-05') },
    },
    {
      name: 'an odd number of days: the left half is the smaller',
      range: r('2026-01-01', '2026-01-04'),
      platform: 3000,
      mirror: 2000,
      want: { kind: 'split', left: r('2026-01-01', '2026-01-02'), right: r('2026-01-02', '2026-01-04') },
    },
    {
      name: 'an open start reaches from the span’s first day',
      range: r(null, '2026-01-05'),
      platform: 2001,
      mirror: 2000,
      want: { kind: 'split', left: r(null, '2026-01-03'), right: r('2026-01-03', '2026-01-05') },
    },
    {
      name: 'a smaller page sweeps less',
      range: r('2026-01-01', '2026-01-09'),
      platform: 10,
      mirror: 9,
      pageSize: 10,
      want: { kind: 'sweep' },
    },
  ];
  it.each(cases)('$name', ({ range, platform, mirror, pageSize, want }) => {
    expect(nextStep({ range, platform, mirror }, SPAN, pageSize ?? 1000)).toEqual(want);
  });
});

describe('countSpan: the days the search splits', () => {
  const cases: { name: string; days: string[]; today: string; want: { from: string; to: string } }[] = [
    { name: 'an empty mirror: today only', days: [], today: '2026-03-01', want: { from: '2026-03-01', to: '2026-03-02' } },
    {
      name: 'from the first mirror day to today',
      days: ['2025-01-10', '2025-06-01'],
      today: '2026-03-01',
      want: { from: '2025-01-10', to: '2026-03-02' },
    },
    {
      name: 'a mirror day after today (clock skew) extends it',
      days: ['2026-02-01', '2026-03-05'],
      today: '2026-03-01',
      want: { from: '2026-02-01', to: '2026-03-06' },
    },
    { name: 'across a month end', days: ['2026-01-31'], today: '2026-01-31', want: { from: '2026-01-31', to: '2026-02-01' } },
  ];
  it.each(cases)('$name', ({ days, today, want }) => {
    expect(
      countSpan(
        new DayCounts(
          days.map((day) => ({ day, n: 1 })),
          0,
        ),
        today,
      ),
    ).toEqual(want);
  });
});

describe('DayCounts: the mirror’s live rows per range', () => {
  const counts = new DayCounts(
    [
      { day: '2026-01-01', n: 3 },
      { day: '2026-01-02', n: 5 },
      { day: '2026-01-04', n: 7 },
    ],
    2,
  );
  it.each([
    { range: r(null, null), want: 17, why: 'the whole list includes the undated rows' },
    { range: r('2026-01-02', null), want: 12, why: 'an open end' },
    { range: r(null, '2026-01-02'), want: 3, why: 'an open start, the end excluded' },
    { range: r('2026-01-02', '2026-01-04'), want: 5, why: 'a closed range, the end excluded' },
    { range: r('2026-01-03', '2026-01-04'), want: 0, why: 'a day without rows' },
  ])('$why: $want', ({ range, want }) => {
    expect(counts.count(range)).toBe(want);
  });
  it('knows its first and last day and total', () => {
    expect([counts.first, counts.last, counts.total]).toEqual(['2026-01-01', '2026-01-04', 17]);
    expect([new DayCounts([], 4).first, new DayCounts([], 4).total]).toEqual([undefined, 4]);
  });
});

describe('ranges as filters and as people read them', () => {
  it.each([
    { range: r(null, null), filters: [], said: 'the whole list' },
    { range: r(null, '2026-01-05'), filters: [{ Field: 'Created', Type: Operator.Less, Value: '2026-01-05' }], said: 'before 2026-01-05' },
    {
      range: r('2026-01-05', null),
      filters: [{ Field: 'Created', Type: Operator.GreaterOrEqual, Value: '2026-01-05' }],
      said: 'from 2026-01-05',
    },
    {
      range: r('2026-01-05', '2026-01-06'),
      filters: [
        { Field: 'Created', Type: Operator.GreaterOrEqual, Value: '2026-01-05' },
        { Field: 'Created', Type: Operator.Less, Value: '2026-01-06' },
      ],
      said: '2026-01-05',
    },
    {
      range: r('2026-01-05', '2026-01-09'),
      filters: [
        { Field: 'Created', Type: Operator.GreaterOrEqual, Value: '2026-01-05' },
        { Field: 'Created', Type: Operator.Less, Value: '2026-01-09' },
      ],
      said: '2026-01-05..2026-01-08',
    },
  ])('$said', ({ range, filters, said }) => {
    expect(rangeFilters(range, 'Created')).toEqual(filters);
    expect(describeRange(range)).toBe(said);
  });
});

describe('refusal: when the sweep’s answer is not trusted', () => {
  const ok = { seen: 1000, live: 1000, ratio: 0.5, anomalies: [] as string[], minTotal: 1000, maxTotal: 1000 };
  const cases: { name: string; over: Partial<typeof ok>; want: RegExp | null }[] = [
    { name: 'a sweep that agrees', over: {}, want: null },
    { name: 'within the TotalCount tolerance', over: { seen: 990 }, want: null },
    { name: 'an empty list and an empty mirror', over: { seen: 0, live: 0, minTotal: 0, maxTotal: 0 }, want: null },
    { name: 'TotalCount moved while paging, seen inside the range', over: { seen: 1100, minTotal: 1000, maxTotal: 1100 }, want: null },
    {
      name: 'too few of the live rows seen',
      over: { seen: 400, live: 1000, minTotal: 400, maxTotal: 400 },
      want: /^saw 400 of 1000 live rows \(< 50%\)/,
    },
    {
      name: 'fewer IDs than TotalCount',
      over: { seen: 800 },
      want: /^received 800 distinct IDs but the platform reported TotalCount 1000 \(tolerance 10\)/,
    },
    {
      name: 'a TotalCount that moved is shown as a range',
      over: { seen: 700, minTotal: 900, maxTotal: 1000 },
      want: /TotalCount 900\.\.1000/,
    },
    { name: 'more IDs than TotalCount', over: { seen: 1200 }, want: /^received 1200 distinct IDs/ },
    {
      name: 'anomalies first, at most three shown',
      over: { anomalies: ['a', 'b', 'c', 'd', 'e'] },
      want: /^the sweep looks broken \(a; b; c; and 2 more\): refusing to mark deletes/,
    },
  ];
  it.each(cases)('$name', ({ over, want }) => {
    const got = refusal({ ...ok, ...over });
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatch(want);
  });

  it.each([
    [0, 10],
    [5000, 10],
    [5001, 11],
    [1_000_000, 2000],
  ])('totalCountTolerance(%i) = %i', (total, want) => {
    expect(totalCountTolerance(total)).toBe(want);
  });
});

describe('a page’s and a range’s anomalies', () => {
  const page = { label: '', index: 2, pageCount: 3, items: 1000, pageSize: 1000, withoutId: 0, idField: 'ID' };
  it.each([
    { name: 'a full page inside the list', over: {}, want: [] },
    { name: 'a short last page', over: { index: 3, items: 4 }, want: [] },
    { name: 'a short page before the last', over: { items: 10 }, want: ['page 2 of 3 held 10 of 1000 items'] },
    {
      name: 'items without an ID',
      over: { withoutId: 2, label: 'from 2026-01-05: ' },
      want: ['from 2026-01-05: page 2: 2 item(s) without ID'],
    },
    {
      name: 'both, in that order',
      over: { items: 10, withoutId: 1 },
      want: ['page 2 of 3 held 10 of 1000 items', 'page 2: 1 item(s) without ID'],
    },
  ])('$name', ({ over, want }) => {
    expect(pageAnomalies({ ...page, ...over })).toEqual(want);
  });

  it.each([
    { seen: 100, got: { minTotal: 100, maxTotal: 100, lastTotal: 100 }, want: null },
    { seen: 91, got: { minTotal: 100, maxTotal: 100, lastTotal: 100 }, want: null },
    {
      seen: 89,
      got: { minTotal: 100, maxTotal: 100, lastTotal: 100 },
      want: '2026-01-05: received 89 distinct IDs but the platform reported TotalCount 100',
    },
    {
      seen: 125,
      got: { minTotal: 100, maxTotal: 114, lastTotal: 114 },
      want: '2026-01-05: received 125 distinct IDs but the platform reported TotalCount 114',
    },
  ])('a range that received $seen IDs', ({ seen, got, want }) => {
    expect(rangeAnomaly('2026-01-05: ', seen, got)).toBe(want);
  });
});

describe('a sweep that threw', () => {
  it('stopped by shutdown: nothing marked, says so', () => {
    expect(sweepFailure('aborted', true)).toEqual({
      status: 'stopped',
      message: 'stopped by shutdown before the sweep ended; nothing was marked',
    });
  });
  it('failed: keeps the cause’s message and says why nothing was marked', () => {
    expect(sweepFailure('HTTP 500 on page 3', false)).toEqual({
      status: 'failed',
      message: 'HTTP 500 on page 3; refusing to mark deletes; a broken or filtered response must not wipe the mirror',
    });
  });
});

describe('lookupIds: what an In lookup may send', () => {
  it.each([
    { ids: ['1', '42', '12345678901234567890'], want: ['1', '42', '12345678901234567890'] },
    { ids: ['local-1', 'abc', '', '-5', '1.5', '123456789012345678901'], want: [] },
    { ids: ['7', 'local-7', '8'], want: ['7', '8'] },
  ])('$ids', ({ ids, want }) => {
    expect(lookupIds(ids)).toEqual(want);
  });
});
