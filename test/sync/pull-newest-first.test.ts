/** The order check of a newest-first page: pull/newest-first.ts, by table. */
import { describe, expect, it } from 'vitest';
import { checkNewestFirst, fallsBackOnRefusal } from '../../src/sync/pull/newest-first.js';
import { cursorMillis } from '../../src/sync/pull/plan.js';

const ZONE = 'Europe/Berlin';
const ms = (t: string): number => cursorMillis(t, ZONE)!;
const page = (index: number, ...times: unknown[]) => ({
  index,
  items: times.map((Modified, i) => ({ ListDataID: String(i + 1), Modified })),
});

describe('checkNewestFirst', () => {
  it.each([
    {
      name: 'descending times: the page passes, its last time carried on',
      page: page(1, '2026-03-02 10:00:02', '2026-03-02 10:00:01', '2026-03-02 10:00:00'),
      before: undefined,
      mark: undefined,
      want: { ok: true, last: ms('2026-03-02 10:00:00') },
    },
    {
      name: 'equal times are in order',
      page: page(2, '2026-03-02 10:00:00', '2026-03-02 10:00:00'),
      before: ms('2026-03-02 10:00:00'),
      mark: undefined,
      want: { ok: true, last: ms('2026-03-02 10:00:00') },
    },
    {
      name: 'an empty page keeps the time before it',
      page: page(3),
      before: ms('2026-03-02 09:00:00'),
      mark: undefined,
      want: { ok: true, last: ms('2026-03-02 09:00:00') },
    },
    {
      name: 'a time newer than the page before: out of order, naming the page',
      page: page(2, '2026-03-02 10:00:05'),
      before: ms('2026-03-02 10:00:00'),
      mark: undefined,
      want: { ok: false, reason: 'page 2 is not in newest-first order of Modified' },
    },
    {
      name: 'a time rising within the page: out of order',
      page: page(1, '2026-03-02 10:00:00', '2026-03-02 10:00:01'),
      before: undefined,
      mark: undefined,
      want: { ok: false, reason: 'page 1 is not in newest-first order of Modified' },
    },
    {
      name: 'past page 1, an item modified in or after the start mark is not held to the order (the follow-up reads it)',
      page: page(2, '2026-03-02 11:00:00', '2026-03-02 09:59:00'),
      before: ms('2026-03-02 10:00:00'),
      mark: ms('2026-03-02 10:30:00'),
      want: { ok: true, last: ms('2026-03-02 09:59:00') },
    },
    {
      name: 'on page 1 the start mark excuses nothing',
      page: page(1, '2026-03-02 10:00:00', '2026-03-02 11:00:00'),
      before: undefined,
      mark: ms('2026-03-02 10:30:00'),
      want: { ok: false, reason: 'page 1 is not in newest-first order of Modified' },
    },
    {
      name: 'a cursor value that is not a date-time: says what it holds',
      page: page(3, '2026-03-02 10:00:00', 'yesterday'),
      before: undefined,
      mark: undefined,
      want: { ok: false, reason: 'the cursor field Modified holds "yesterday", not a date-time (page 3)' },
    },
    {
      name: 'a missing cursor value',
      page: page(1, null),
      before: undefined,
      mark: undefined,
      want: { ok: false, reason: 'the cursor field Modified holds null, not a date-time (page 1)' },
    },
  ])('$name', ({ page: p, before, mark, want }) => {
    expect(checkNewestFirst(p, 'Modified', ZONE, before, mark)).toEqual(want);
  });
});

describe('fallsBackOnRefusal: a refused newest-first read reads by created, before it wrote a page only', () => {
  it.each([
    { order: 'newest-first', refused: true, pages: 0, want: true },
    { order: 'newest-first', refused: true, pages: 3, want: false },
    { order: 'newest-first', refused: false, pages: 0, want: false },
    { order: 'by-created', refused: true, pages: 0, want: false },
  ] as const)('$order, refused $refused, $pages page(s) written: $want', ({ order, refused, pages, want }) => {
    expect(fallsBackOnRefusal(order, refused, pages)).toBe(want);
  });
});
