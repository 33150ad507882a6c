/**
 * The real-time flush's decisions, table-driven and without a database: which
 * claims need the platform (and how they are asked), which the mirror or a
 * trusted body settle; then what the answers mean: rows written, rows marked
 * deleted, items re-read later, items waiting for a retry, events done.
 */
import { describe, expect, it } from 'vitest';
import { ORPHANS_ID, type Claim } from '../../src/realtime/claim-merge.js';
import { planReads, planWrites, type ReadAnswer, type ReadPlan, type StoredRow } from '../../src/realtime/flush-plan.js';

const claim = (id: string, over: Partial<Claim> = {}): Claim => ({
  id,
  inboxIds: [Number(id.replace(/\D/g, '') || 0)],
  deleteClaimed: false,
  announced: null,
  body: null,
  receivedAt: new Date(0),
  rechecks: 0,
  attempts: 0,
  retryAt: 0,
  ...over,
});
const item = (id: string, version: number): Record<string, unknown> => ({ ID: id, RowVersion: version });
const rows = (entries: [string, StoredRow][]): Map<string, StoredRow> => new Map(entries);

type Step = 'settled' | 'fromBody' | 'reread' | 'byIdOnly' | 'alsoById';

/** Where planReads put the claim. */
function stepOf(plan: ReadPlan, id: string): Step {
  if (plan.settled.some((c) => c.id === id)) return 'settled';
  if (plan.fromBody.some((c) => c.id === id)) return 'fromBody';
  if (plan.byIdOnly.has(id)) return 'byIdOnly';
  if (plan.alsoById.has(id)) return 'alsoById';
  expect(plan.reread.some((c) => c.id === id)).toBe(true);
  return 'reread';
}

describe('planReads', () => {
  it.each<{ name: string; c: Claim; row?: StoredRow; trust?: boolean; want: Step }>([
    { name: 'the orphans claim reads nothing', c: claim(ORPHANS_ID, { announced: 0 }), want: 'settled' },
    {
      name: 'a version the mirror holds: a duplicate',
      c: claim('1', { announced: 3 }),
      row: { version: 3, deleted: false },
      want: 'settled',
    },
    {
      name: 'an older version than the mirror: a late copy',
      c: claim('1', { announced: 2 }),
      row: { version: 3, deleted: false },
      want: 'settled',
    },
    { name: 'a newer version: re-read', c: claim('1', { announced: 4 }), row: { version: 3, deleted: false }, want: 'reread' },
    { name: 'an item the mirror lacks: re-read', c: claim('1', { announced: 1 }), want: 'reread' },
    { name: 'no version announced: re-read', c: claim('1'), row: { version: 3, deleted: false }, want: 'reread' },
    { name: 'a row without a version: re-read', c: claim('1', { announced: 1 }), row: { version: null, deleted: false }, want: 'reread' },
    { name: 'a delete claim: by ID even when the query shows it', c: claim('1', { deleteClaimed: true }), want: 'alsoById' },
    {
      name: 'a delete claim with an old version: still asked',
      c: claim('1', { deleteClaimed: true, announced: 2 }),
      row: { version: 3, deleted: false },
      want: 'alsoById',
    },
    { name: 'a re-check: by ID only', c: claim('1', { announced: 5, rechecks: 1 }), row: { version: 5, deleted: false }, want: 'byIdOnly' },
    {
      name: 'a re-check of a delete claim: by ID only',
      c: claim('1', { deleteClaimed: true, rechecks: 2 }),
      want: 'byIdOnly',
    },
    {
      name: 'trust body: a newer body applied as sent',
      c: claim('1', { announced: 4, body: item('1', 4) }),
      row: { version: 3, deleted: false },
      trust: true,
      want: 'fromBody',
    },
    { name: 'trust body: a new item applied as sent', c: claim('1', { announced: 1, body: item('1', 1) }), trust: true, want: 'fromBody' },
    {
      name: 'trust body: a row marked deleted is re-read',
      c: claim('1', { announced: 4, body: item('1', 4) }),
      row: { version: 3, deleted: true },
      trust: true,
      want: 'reread',
    },
    {
      name: 'trust body: a version the mirror holds is settled',
      c: claim('1', { announced: 3, body: item('1', 3) }),
      row: { version: 3, deleted: false },
      trust: true,
      want: 'settled',
    },
    {
      name: 'without trust, a newer body is re-read',
      c: claim('1', { announced: 4, body: item('1', 4) }),
      row: { version: 3, deleted: false },
      want: 'reread',
    },
    {
      name: 'trust body: a delete claim is still asked',
      c: claim('1', { deleteClaimed: true, body: item('1', 4) }),
      trust: true,
      want: 'alsoById',
    },
  ])('$name', ({ c, row, trust, want }) => {
    const plan = planReads([c], rows(row ? [[c.id, row]] : []), trust ?? false);
    expect(stepOf(plan, c.id)).toBe(want);
    const placed = plan.settled.length + plan.fromBody.length + plan.reread.length;
    expect(placed).toBe(1);
  });
});

describe('planWrites', () => {
  const present = (id: string, version: number, byId = false): ReadAnswer => ({ kind: 'present', item: item(id, version), byId });
  const failure = new Error('HTTP 503');

  it.each<{
    name: string;
    c: Claim;
    row?: StoredRow;
    answer?: ReadAnswer;
    want: { upsert: number[]; deleted: boolean; recheck: boolean; failed: boolean; done: boolean };
  }>([
    {
      name: 'found at the announced version: written, done',
      c: claim('1', { announced: 4 }),
      row: { version: 3, deleted: false },
      answer: present('1', 4),
      want: { upsert: [4], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'found newer than announced: written, done',
      c: claim('1', { announced: 4 }),
      answer: present('1', 6),
      want: { upsert: [6], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'found older than announced (query lag): written, re-read later',
      c: claim('1', { announced: 4 }),
      row: { version: 2, deleted: false },
      answer: present('1', 3),
      want: { upsert: [3], deleted: false, recheck: true, failed: false, done: false },
    },
    {
      name: 'still older after the last re-check: left to the pull, done',
      c: claim('1', { announced: 4, rechecks: 5 }),
      answer: present('1', 3, true),
      want: { upsert: [3], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'a deleted row shown by a query at its version: not brought back',
      c: claim('1'),
      row: { version: 3, deleted: true },
      answer: present('1', 3),
      want: { upsert: [], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'a deleted row shown by a query newer: brought back',
      c: claim('1', { announced: 4 }),
      row: { version: 3, deleted: true },
      answer: present('1', 4),
      want: { upsert: [4], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'a deleted row read by ID: brought back whatever its version',
      c: claim('1'),
      row: { version: 3, deleted: true },
      answer: present('1', 3, true),
      want: { upsert: [3], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'a deleted row without a version, shown by a query: not brought back',
      c: claim('1'),
      row: { version: null, deleted: true },
      answer: present('1', 3),
      want: { upsert: [], deleted: false, recheck: false, failed: false, done: true },
    },
    {
      name: 'gone: marked deleted, done',
      c: claim('1', { deleteClaimed: true }),
      row: { version: 3, deleted: false },
      answer: { kind: 'gone' },
      want: { upsert: [], deleted: true, recheck: false, failed: false, done: true },
    },
    {
      name: 'a read that failed: nothing written, waits for a retry',
      c: claim('1', { announced: 4 }),
      answer: { kind: 'unanswered', error: failure },
      want: { upsert: [], deleted: false, recheck: false, failed: true, done: false },
    },
    {
      name: 'settled without a read: done',
      c: claim('1', { announced: 3 }),
      row: { version: 3, deleted: false },
      want: { upsert: [], deleted: false, recheck: false, failed: false, done: true },
    },
  ])('$name', ({ c, row, answer, want }) => {
    const stored = rows(row ? [[c.id, row]] : []);
    const reads = planReads([c], stored, false);
    const answers = new Map(answer ? [[c.id, answer]] : []);
    const plan = planWrites({ claims: [c], reads, stored, answers, versionField: 'RowVersion', maxRechecks: 5 });
    expect(plan.upsert.map((i) => i['RowVersion'])).toEqual(want.upsert);
    expect(plan.markDeleted).toEqual(want.deleted ? [c.id] : []);
    expect(plan.recheck.map((x) => x.id)).toEqual(want.recheck ? [c.id] : []);
    expect([...plan.failed.keys()]).toEqual(want.failed ? [c.id] : []);
    expect(plan.done).toEqual(want.done ? c.inboxIds : []);
  });

  it('a chunk: trusted bodies written after what was found, and only the waiting claims keep their events', () => {
    const claims = [
      claim('1', { announced: 2, inboxIds: [11, 12] }),
      claim('2', { announced: 5, body: item('2', 5), inboxIds: [21] }),
      claim('3', { deleteClaimed: true, inboxIds: [31] }),
      claim('4', { announced: 9, inboxIds: [41] }),
      claim('5', { announced: 1, inboxIds: [51] }),
      claim(ORPHANS_ID, { announced: 0, inboxIds: [61, 62] }),
    ];
    const stored = rows([
      ['2', { version: 4, deleted: false }],
      ['3', { version: 1, deleted: false }],
    ]);
    const reads = planReads(claims, stored, true);
    expect(reads.reread.map((c) => c.id)).toEqual(['1', '3', '4', '5']);
    expect(reads.fromBody.map((c) => c.id)).toEqual(['2']);
    expect(reads.settled.map((c) => c.id)).toEqual([ORPHANS_ID]);
    const answers = new Map<string, ReadAnswer>([
      ['1', present('1', 2)],
      ['4', present('4', 8)],
      ['3', { kind: 'gone' }],
      ['5', { kind: 'unanswered', error: failure }],
    ]);
    const plan = planWrites({ claims, reads, stored, answers, versionField: 'RowVersion', maxRechecks: 5 });
    expect(plan.upsert.map((i) => i['ID'])).toEqual(['1', '4', '2']);
    expect(plan.markDeleted).toEqual(['3']);
    expect(plan.recheck.map((c) => c.id)).toEqual(['4']);
    expect(plan.failed).toEqual(new Map([['5', failure]]));
    expect(plan.done).toEqual([11, 12, 21, 31, 61, 62]);
  });
});
