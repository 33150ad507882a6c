/** The follow-up rules: whether the read ends with it, from where it reads, what of a page it writes (pull/follow-up.ts). */
import { describe, expect, it } from 'vitest';
import { freshCheckpoint, type PullCheckpoint } from '../../src/sync/pull/checkpoint.js';
import { followUpSince, followUpWanted, movedSince } from '../../src/sync/pull/follow-up.js';
import { cursorMillis, FULL_READ } from '../../src/sync/pull/plan.js';

const ZONE = 'Europe/Berlin';

describe('followUpWanted', () => {
  it.each([
    { name: 'a by-created read of several pages', order: 'by-created', repeats: 0, pagesRead: 3, resumed: false, want: true },
    { name: 'a by-created read of one page: one snapshot', order: 'by-created', repeats: 0, pagesRead: 1, resumed: false, want: false },
    { name: 'a read of no page', order: 'by-created', repeats: 0, pagesRead: 0, resumed: false, want: false },
    {
      name: 'a resumed read, even of one page (its mark is its first attempt’s)',
      order: 'by-created',
      repeats: 0,
      pagesRead: 1,
      resumed: true,
      want: true,
    },
    { name: 'a resumed newest-first read of no page', order: 'newest-first', repeats: 0, pagesRead: 0, resumed: true, want: true },
    {
      name: 'newest first, several pages, no repeats: the mark stands',
      order: 'newest-first',
      repeats: 0,
      pagesRead: 4,
      resumed: false,
      want: false,
    },
    {
      name: 'newest first, several pages, items seen twice: counted by the follow-up',
      order: 'newest-first',
      repeats: 2,
      pagesRead: 2,
      resumed: false,
      want: true,
    },
    {
      name: 'newest first, one page with repeats: one snapshot',
      order: 'newest-first',
      repeats: 1,
      pagesRead: 1,
      resumed: false,
      want: false,
    },
  ] as const)('$name', ({ order, repeats, pagesRead, resumed, want }) => {
    expect(followUpWanted({ order, repeats, pagesRead, resumed })).toBe(want);
  });
});

describe('followUpSince', () => {
  const cp = (over: Partial<PullCheckpoint>): PullCheckpoint => ({
    ...freshCheckpoint({ kind: 'incremental' }, FULL_READ, '2026-03-02', 7),
    ...over,
  });
  it.each([
    { name: 'from the start mark', over: { highWaterAtStart: '2026-03-02 10:00:00' }, want: '2026-03-02 10:00:00' },
    {
      name: 'from earlier when the first page may have been served before the mark',
      over: { highWaterAtStart: '2026-03-02 10:00:00', followUpFrom: '2026-03-02 09:59:57' },
      want: '2026-03-02 09:59:57',
    },
    {
      name: 'a follow-up-from recorded as null reads from the mark',
      over: { highWaterAtStart: '2026-03-02 10:00:00', followUpFrom: null },
      want: '2026-03-02 10:00:00',
    },
    { name: 'no start mark: none', over: { highWaterAtStart: null }, want: null },
    { name: 'a start mark that does not parse: none', over: { highWaterAtStart: 'later' }, want: null },
    {
      name: 'a run that fell back (the cursor cannot be read newest first): none',
      over: {
        highWaterAtStart: '2026-03-02 10:00:00',
        plan: { ...FULL_READ, fallback: 'the cursor field Modified is neither sortable nor indexed' },
      },
      want: null,
    },
    {
      name: 'a follow-up-from that does not parse: none',
      over: { highWaterAtStart: '2026-03-02 10:00:00', followUpFrom: 'before' },
      want: null,
    },
  ])('$name', ({ over, want }) => {
    const got = followUpSince(cp(over), ZONE);
    expect(got).toEqual(want === null ? null : { since: want, sinceMs: cursorMillis(want, ZONE) });
  });
});

describe('movedSince', () => {
  const since = cursorMillis('2026-03-02 10:00:00', ZONE)!;
  const items = (...times: unknown[]) => times.map((Modified, i) => ({ ListDataID: String(i + 1), Modified }));
  it.each([
    {
      name: 'all modified since the mark: all written and touched',
      times: ['2026-03-02 10:00:05', '2026-03-02 10:00:00'],
      moved: ['1', '2'],
      touched: ['1', '2'],
    },
    {
      name: 'older items were read by the run’s pages: left out',
      times: ['2026-03-02 10:00:05', '2026-03-02 09:59:59'],
      moved: ['1'],
      touched: ['1'],
    },
    {
      name: 'a time that does not parse: written as the safe side, not counted as moved',
      times: ['garbled', '2026-03-02 09:00:00'],
      moved: ['1'],
      touched: [],
    },
    { name: 'an empty page', times: [], moved: [], touched: [] },
  ])('$name', ({ times, moved, touched }) => {
    const page = items(...times);
    const got = movedSince(
      page,
      page.map((it) => it.ListDataID),
      since,
      'Modified',
      ZONE,
    );
    expect({ moved: got.moved.map((it) => it.ListDataID), touched: got.touched }).toEqual({ moved, touched });
  });
});
