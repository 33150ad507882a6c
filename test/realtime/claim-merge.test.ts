/**
 * Item events merged into claims, table-driven and without a database: one
 * claim per item with every event, a delete claim, the highest announced
 * version and its body; events naming no item in the orphans' claim; a
 * waiting claim absorbing a new one; failed claims cut into ever smaller
 * chunks.
 */
import { describe, expect, it } from 'vitest';
import { absorb, mergeClaims, ORPHANS_ID, retryChunks, type Claim, type EventRow } from '../../src/realtime/claim-merge.js';
import { ITEM_EVENT } from '../../src/realtime/item-events.js';

const fields = { idField: 'ListDataID', versionField: 'RowVersion', listIdField: 'ListDataID' };
const at = (s: number): Date => new Date(s * 1000);
const now = at(1000);
const event = (id: number, body: unknown, type: number = ITEM_EVENT.createdOrModified, received = id): EventRow => ({
  id,
  type,
  body: typeof body === 'string' ? body : JSON.stringify(body),
  received_at: at(received),
});
const claim = (id: string, over: Partial<Claim> = {}): Claim => ({
  id,
  inboxIds: [],
  deleteClaimed: false,
  announced: null,
  body: null,
  receivedAt: at(0),
  rechecks: 0,
  attempts: 0,
  retryAt: 0,
  ...over,
});

describe('mergeClaims', () => {
  it.each<{ name: string; rows: EventRow[]; carried?: Claim[]; want: Record<string, Partial<Claim>> }>([
    {
      name: 'one event: its item, version and body',
      rows: [event(1, { ListDataID: '7', RowVersion: 3 })],
      want: { '7': { inboxIds: [1], announced: 3, body: { ListDataID: '7', RowVersion: 3 }, deleteClaimed: false, receivedAt: at(1) } },
    },
    {
      name: 'reordered events of one item: the highest version wins, the earliest arrival counts',
      rows: [event(1, { ListDataID: '7', RowVersion: 5 }, 3, 10), event(2, { ListDataID: '7', RowVersion: 4 }, 3, 5)],
      want: { '7': { inboxIds: [1, 2], announced: 5, receivedAt: at(5) } },
    },
    {
      name: 'a delete event: a delete claim, no version',
      rows: [event(1, { ListDataID: '7', RowVersion: 9 }, ITEM_EVENT.deleted)],
      want: { '7': { inboxIds: [1], deleteClaimed: true, announced: null, body: null } },
    },
    {
      name: 'the item wrapped in Data',
      rows: [event(1, { Data: { ListDataID: '7', RowVersion: '2' } })],
      want: { '7': { inboxIds: [1], announced: 2 } },
    },
    {
      name: 'a version that is no number: no announced version',
      rows: [event(1, { ListDataID: '7', RowVersion: 'x' })],
      want: { '7': { inboxIds: [1], announced: null, body: null } },
    },
    {
      name: 'events naming no item, a local row, or no JSON: the orphans claim',
      rows: [event(1, { Other: 1 }), event(2, { ListDataID: 'local-5', RowVersion: 1 }), event(3, '{not json'), event(4, '[1]')],
      want: { [ORPHANS_ID]: { inboxIds: [1, 2, 3, 4], announced: 0, receivedAt: now } },
    },
    {
      name: 'a carried re-check joined by a new event of its item',
      rows: [event(2, { ListDataID: '7', RowVersion: 6 })],
      carried: [claim('7', { inboxIds: [1], announced: 5, rechecks: 1 })],
      want: { '7': { inboxIds: [1, 2], announced: 6, rechecks: 1 } },
    },
  ])('$name', ({ rows, carried, want }) => {
    const got = mergeClaims(rows, carried ?? [], fields, now);
    expect([...got.keys()].sort()).toEqual(Object.keys(want).sort());
    for (const [id, w] of Object.entries(want)) expect(got.get(id)).toMatchObject(w);
  });

  it('leaves the carried claims as they were', () => {
    const carried = claim('7', { inboxIds: [1], announced: 5 });
    mergeClaims([event(2, { ListDataID: '7', RowVersion: 6 })], [carried], fields, now);
    expect(carried).toMatchObject({ inboxIds: [1], announced: 5 });
  });
});

describe('absorb', () => {
  it.each<{ name: string; into: Partial<Claim>; from: Partial<Claim>; want: Partial<Claim> }>([
    {
      name: 'events joined once each',
      into: { inboxIds: [1, 2] },
      from: { inboxIds: [2, 3] },
      want: { inboxIds: [1, 2, 3] },
    },
    {
      name: 'a higher version and its body win',
      into: { announced: 3, body: { v: 3 } },
      from: { announced: 4, body: { v: 4 } },
      want: { announced: 4, body: { v: 4 } },
    },
    {
      name: 'a lower version changes nothing',
      into: { announced: 4, body: { v: 4 } },
      from: { announced: 3, body: { v: 3 } },
      want: { announced: 4, body: { v: 4 } },
    },
    { name: 'a delete claim sticks', into: { deleteClaimed: false }, from: { deleteClaimed: true }, want: { deleteClaimed: true } },
    {
      name: 'the earliest arrival and the most attempts',
      into: { receivedAt: at(5), attempts: 1 },
      from: { receivedAt: at(2), attempts: 3 },
      want: { receivedAt: at(2), attempts: 3 },
    },
  ])('$name', ({ into, from, want }) => {
    const c = claim('7', into);
    absorb(c, claim('7', from));
    expect(c).toMatchObject(want);
  });
});

describe('retryChunks', () => {
  const failed = (n: number, attempts: number): Claim[] => Array.from({ length: n }, (_, i) => claim(`${attempts}-${i}`, { attempts }));

  it.each<{ name: string; claims: Claim[]; sizes: number[] }>([
    { name: 'nothing failed: no chunk', claims: [], sizes: [] },
    { name: 'failed once: halves', claims: failed(8, 1), sizes: [4, 4] },
    { name: 'failed twice: quarters', claims: failed(8, 2), sizes: [2, 2, 2, 2] },
    { name: 'failed often: one claim a chunk', claims: failed(3, 5), sizes: [1, 1, 1] },
    { name: 'odd counts round up', claims: failed(5, 1), sizes: [3, 2] },
    { name: 'fewest attempts first', claims: [...failed(2, 3), ...failed(4, 1)], sizes: [2, 2, 1, 1] },
  ])('$name', ({ claims, sizes }) => {
    const chunks = retryChunks(claims);
    expect(chunks.map((c) => c.length)).toEqual(sizes);
    expect(
      chunks
        .flat()
        .map((c) => c.id)
        .sort(),
    ).toEqual(claims.map((c) => c.id).sort());
  });
});
