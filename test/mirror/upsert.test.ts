import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureMirrorTable,
  ensureUsersTable,
  toPlatform,
  upsertItems,
  upsertUsers,
  withListsyncWriter,
  type TableMapping,
} from '../../src/mirror/index.js';
import { decodeStorable } from '../../src/storable.js';
import type { Item } from '../../src/platform/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { orderId, orderItem, ordersTable } from './fixtures.js';

const ZONE = 'Asia/Shanghai';
let t: TestDatabase;
let m: TableMapping;

beforeAll(async () => {
  t = await createTestDatabase();
  m = await ensureMirrorTable(t.db, ordersTable());
});
afterAll(async () => t?.drop());

type Row = Record<string, unknown>;
const rowOf = async (n: number): Promise<Row> =>
  (await t
    .db('orders')
    .withSchema('mirror')
    .where({ id: orderId(n) })
    .first()) as Row;
const items = (from: number, to: number, version = 1) => Array.from({ length: to - from }, (_, i) => orderItem(from + i, version));
async function waitForLockWait(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const r = await t.db.raw(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (r.rows[0].n > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the second writer never waited for the first');
}
/**
 * Another transaction writes `first` and holds it while `mine` runs into it (a lock wait on the same
 * ID), then commits: `mine` sees the row appear in the middle of its write. Returns what `mine` did.
 */
async function whileAnotherWriterInserts<T>(first: Item, mine: () => Promise<T>): Promise<T> {
  const other = await t.db.transaction();
  try {
    expect(await upsertItems(other, m, [first], ZONE)).toMatchObject({ inserted: 1 });
    const pending = mine();
    await waitForLockWait();
    await other.commit();
    return await pending;
  } finally {
    if (!other.isCompleted()) await other.rollback();
  }
}
/** Rows stored for orders from..to (inclusive). */
const storedBetween = async (from: number, to: number): Promise<number> =>
  Number(
    (
      await t
        .db('orders')
        .withSchema('mirror')
        .whereBetween('id', [orderId(from), orderId(to)])
        .count({ n: '*' })
    )[0]!.n,
  );
/** Marks a stored row deleted, as reconcile does (listsync's own write, not captured). */
const softDelete = (n: number): Promise<void> =>
  withListsyncWriter(t.db, async (trx) => {
    await trx('orders')
      .withSchema('mirror')
      .where({ id: orderId(n) })
      .update({ _deleted_at: trx.fn.now() });
  });
const outboxCount = async () => Number((await t.db('outbox').withSchema('listsync').count({ n: '*' }))[0]!.n);

describe('upsertItems', () => {
  it('inserts new rows with typed values, and the round trip gives the wire values back', async () => {
    const r = await t.db.transaction((trx) => upsertItems(trx, m, items(0, 10), ZONE));
    expect(r).toMatchObject({ inserted: 10, updated: 0, unchanged: 0, failedValues: 0, failures: [], skippedPending: [], undeleted: 0 });
    const row = await rowOf(7);
    expect(row).toMatchObject({
      id: '7000000000000000007',
      row_version: 1,
      title: 'Order 7',
      order_date: '2026-03-08',
      amount: '7.07',
      quantity: '9007199254741000',
      paid: true,
      tags: ['red', 'blue'],
      customer: orderId(7),
      attachment: null,
      notes: 'note 7',
      _deleted_at: null,
    });
    // Wall time 2026-03-08 17:01:37 in Shanghai is 09:01:37Z.
    expect((row.delivered_at as Date).toISOString()).toBe('2026-03-08T09:01:37.000Z');
    expect(row._raw).toEqual(orderItem(7));
    // Every column converts back to exactly what the platform sent.
    for (const n of [0, 3, 5, 7]) {
      const back = await rowOf(n);
      const sent = orderItem(n);
      for (const c of m.columns) expect(toPlatform(c.kind, back[c.column], ZONE), `${c.field} of item ${n}`).toBe(sent[c.field]);
      expect(toPlatform('timestamptz', back.created_at, ZONE)).toBe(sent.Created);
      expect(toPlatform('timestamptz', back.modified_at, ZONE)).toBe(sent.Modified);
    }
    expect(await outboxCount()).toBe(0);
  });

  it('does not rewrite rows whose version did not change (not even _synced_at)', async () => {
    const before = await rowOf(3);
    const r = await upsertItems(t.db, m, items(0, 10), ZONE);
    expect(r).toMatchObject({ inserted: 0, updated: 0, unchanged: 10 });
    const after = await rowOf(3);
    expect(after._synced_at).toEqual(before._synced_at);
    const xmin = async () => (await t.db.raw(`select xmin::text as x from mirror.orders where id = ?`, [orderId(3)])).rows[0].x as string;
    const x1 = await xmin();
    await upsertItems(t.db, m, items(0, 10), ZONE);
    expect(await xmin()).toBe(x1);
  });

  it('updates rows whose version moved', async () => {
    const r = await upsertItems(
      t.db,
      m,
      [...items(0, 7, 1), ...items(7, 10, 2).map((i) => ({ ...i, Title: `${String(i.Title)} v2` }))],
      ZONE,
    );
    expect(r).toMatchObject({ inserted: 0, updated: 3, unchanged: 7 });
    expect(await rowOf(8)).toMatchObject({ row_version: 2, title: 'Order 8 v2' });
    expect(await outboxCount()).toBe(0);
  });

  it('stores values that do not convert as NULL, keeps the item in _raw, and counts them', async () => {
    const bad = orderItem(100, 1, { Amount: 'abc', OrderDate: '2026-13-45', Paid: 'yes', Tags: '["a",', Modified: 'soon' });
    const r = await upsertItems(t.db, m, [bad, orderItem(101)], ZONE);
    expect(r).toMatchObject({ inserted: 2, failedValues: 5 });
    expect(r.failures).toEqual(
      expect.arrayContaining([
        { id: orderId(100), field: 'Amount', raw: 'abc' },
        { id: orderId(100), field: 'OrderDate', raw: '2026-13-45' },
        { id: orderId(100), field: 'Paid', raw: 'yes' },
        { id: orderId(100), field: 'Tags', raw: '["a",' },
        { id: orderId(100), field: 'Modified', raw: 'soon' },
      ]),
    );
    const row = await rowOf(100);
    expect(row).toMatchObject({ amount: null, order_date: null, paid: null, tags: null, modified_at: null, title: 'Order 100' });
    expect(row._raw).toEqual(bad);
  });

  it('undeletes a soft-deleted row that arrives again, even at the same version', async () => {
    await softDelete(2);
    const r = await upsertItems(t.db, m, [orderItem(2), orderItem(4)], ZONE);
    expect(r).toMatchObject({ updated: 1, unchanged: 1, undeleted: 1 });
    expect((await rowOf(2))._deleted_at).toBeNull();
  });

  it('skips rows with an open local change and reports them', async () => {
    await t
      .db('outbox')
      .withSchema('listsync')
      .insert({ list_name: 'orders', op: 'update', item_id: orderId(5), changes: { title: 'mine' }, base_version: 1, status: 'pending' });
    await t
      .db('outbox')
      .withSchema('listsync')
      .insert({ list_name: 'orders', op: 'update', item_id: orderId(6), changes: { title: 'old' }, base_version: 1, status: 'applied' });
    await t
      .db('outbox')
      .withSchema('listsync')
      .insert({ list_name: 'other', op: 'update', item_id: orderId(4), changes: { title: 'x' }, base_version: 1, status: 'pending' });
    const sent = [orderItem(4, 3), orderItem(5, 3), orderItem(6, 3)];
    const r = await upsertItems(t.db, m, sent, ZONE);
    expect(r).toMatchObject({ updated: 2, unchanged: 0 });
    expect(r.skippedPending).toEqual([{ id: orderId(5), remoteVersion: 3, baseVersion: 1, item: sent[1] }]);
    expect((await rowOf(5)).row_version).toBe(1);
    expect((await rowOf(6)).row_version).toBe(3);
  });

  it('keeps one row per id within a batch (the highest version) and rejects items without an id', async () => {
    const r = await upsertItems(
      t.db,
      m,
      [orderItem(200, 2, { Title: 'v2' }), orderItem(200, 1, { Title: 'v1' }), { Title: 'no id' }, { ListDataID: '', Title: 'empty id' }],
      ZONE,
    );
    expect(r).toMatchObject({ inserted: 1, invalid: 2, failedValues: 2 });
    expect(await rowOf(200)).toMatchObject({ row_version: 2, title: 'v2' });
  });

  it('accepts ids as JSON numbers, bigint or lossless numbers, keeping every digit', async () => {
    const r = await upsertItems(
      t.db,
      m,
      [
        orderItem(300, 1, { ListDataID: 7000000000000000301n }),
        orderItem(301, 1, { ListDataID: { isLosslessNumber: true, value: '7000000000000000302' }, RowVersion: '1' }),
      ],
      ZONE,
    );
    expect(r).toMatchObject({ inserted: 2, failedValues: 0 });
    expect(await rowOf(301)).toBeTruthy();
    expect(await rowOf(302)).toBeTruthy();
  });

  it('rewrites an item without a version only when its content changed', async () => {
    const noVersion = orderItem(400, 1, { RowVersion: undefined });
    delete noVersion.RowVersion;
    expect(await upsertItems(t.db, m, [noVersion], ZONE)).toMatchObject({ inserted: 1 });
    expect(await upsertItems(t.db, m, [noVersion], ZONE)).toMatchObject({ unchanged: 1 });
    expect(await upsertItems(t.db, m, [{ ...noVersion, Title: 'changed' }], ZONE)).toMatchObject({ updated: 1 });
  });

  it('splits large inputs into batches within one call', async () => {
    const r = await upsertItems(t.db, m, items(1000, 3500), ZONE);
    expect(r).toMatchObject({ inserted: 2500, updated: 0, unchanged: 0 });
    expect(await storedBetween(1000, 3499)).toBe(2500);
  });

  it('copes with another writer inserting the same item at the same time', async () => {
    // This one reads "not stored yet", then its insert waits for the other transaction.
    const r = await whileAnotherWriterInserts(orderItem(600, 1), () => upsertItems(t.db, m, [orderItem(600, 2, { Title: 'newer' })], ZONE));
    expect(r).toMatchObject({ inserted: 0, updated: 1, unchanged: 0 });
    expect(await rowOf(600)).toMatchObject({ row_version: 2, title: 'newer' });
  });

  it('falls back cleanly when another writer commits one of a large batch while the COPY is streaming', async () => {
    // 1000 new rows: the COPY waits at the 11th for the other transaction while later slices are still being sent.
    const sent = items(20_000, 21_000, 2).map((it, i) => (i === 900 ? { ...it, Amount: 'abc' } : it));
    const r = await whileAnotherWriterInserts(orderItem(20_010, 1), () => upsertItems(t.db, m, sent, ZONE));
    expect(r).toMatchObject({ inserted: 999, updated: 1, unchanged: 0, failedValues: 1 });
    expect(r.failures).toEqual([{ id: orderId(20_900), field: 'Amount', raw: 'abc' }]);
    expect(await rowOf(20_010)).toMatchObject({ row_version: 2 });
    expect(await storedBetween(20_000, 20_999)).toBe(1000);
  });

  it('keeps odd text intact (quotes, backslashes, braces) and what jsonb refuses (NUL, lone surrogates) exactly in _raw', async () => {
    const odd = orderItem(500, 1, {
      Title: 'a "quoted" \\ back{slash},',
      Tags: '["x,y","{z}","q\\"r"]',
      Notes: 'nul\u0000char',
      Status: 'half\ud800pair',
      Customer: '\\u0000 is text',
    });
    const r = await upsertItems(t.db, m, [odd], ZONE);
    expect(r).toMatchObject({ inserted: 1, failedValues: 0, unstorable: 1 });
    const row = await rowOf(500);
    expect(row.title).toBe('a "quoted" \\ back{slash},');
    expect(row.tags).toEqual(['x,y', '{z}', 'q"r']);
    expect(row.notes).toBe('nul\uFFFDchar');
    expect(decodeStorable(row._raw)).toEqual(odd);
    expect(row.status).toBe('half\uFFFDpair');
    expect((row._raw as Row).Customer).toBe('\\u0000 is text');
    expect(row.customer).toBe('\\u0000 is text');
  });

  it("keeps what COPY's text format treats specially (tabs, line breaks, backslashes, a literal \\N) in new rows", async () => {
    const odd = orderItem(510, 1, {
      Title: 'tab\there\nnew line\r\nwindows',
      Notes: '\\N',
      Status: 'ends with a backslash \\',
      Tags: '["a\\\\b","c\\td"]',
    });
    expect(await upsertItems(t.db, m, [odd], ZONE)).toMatchObject({ inserted: 1, failedValues: 0 });
    const row = await rowOf(510);
    expect(row).toMatchObject({ title: odd.Title, notes: '\\N', status: 'ends with a backslash \\', tags: ['a\\b', 'c\td'] });
    expect(row._raw).toEqual(odd);
  });
  it('writes text in any script into new rows byte for byte (3- and 4-byte UTF-8, a value made only of them)', async () => {
    const wide = '订单'.repeat(2000);
    const odd = orderItem(520, 1, { Title: '客户 «Ünïcødé» 🚚 ₹', Notes: wide, Status: '🙂', Customer: 'ｆｕｌｌ\twidth' });
    expect(await upsertItems(t.db, m, [odd, orderItem(521, 1)], ZONE, { expectNew: true })).toMatchObject({ inserted: 2, failedValues: 0 });
    const row = await rowOf(520);
    expect(row).toMatchObject({ title: odd.Title, notes: wide, status: '🙂', customer: 'ｆｕｌｌ\twidth' });
    expect(row._raw).toEqual(odd);
    expect(await rowOf(521)).toMatchObject({ title: 'Order 521' });
  });
});

describe('upsertItems with expectNew (a first load: copied in before anything is read)', () => {
  it('copies new rows in, counting values that do not convert once', async () => {
    const fresh = [orderItem(8000, 1, { Amount: 'abc' }), orderItem(8001, 1)];
    const r = await upsertItems(t.db, m, fresh, ZONE, { expectNew: true });
    expect(r).toMatchObject({ inserted: 2, updated: 0, unchanged: 0, failedValues: 1 });
    expect(r.failures).toEqual([{ id: orderId(8000), field: 'Amount', raw: 'abc' }]);
    expect(await rowOf(8001)).toMatchObject({ row_version: 1, title: 'Order 8001', amount: '8001.01', paid: true });
  });

  it('is only a hint: a batch holding stored, soft-deleted and locally edited rows ends exactly as without it', async () => {
    await upsertItems(t.db, m, items(8100, 8104), ZONE);
    await softDelete(8101);
    await t
      .db('outbox')
      .withSchema('listsync')
      .insert({
        list_name: 'orders',
        op: 'update',
        item_id: orderId(8102),
        changes: { title: 'mine' },
        base_version: 1,
        status: 'pending',
      });
    const sent = [
      orderItem(8100, 2, { Title: 'newer', Amount: 'abc' }), // stored at 1: updated
      orderItem(8101, 1), // soft-deleted: back
      orderItem(8102, 2), // open local change: left alone
      orderItem(8103, 1), // same version: unchanged
      orderItem(8104, 1), // new
    ];
    const r = await upsertItems(t.db, m, sent, ZONE, { expectNew: true });
    expect(r).toMatchObject({ inserted: 1, updated: 2, unchanged: 1, undeleted: 1, failedValues: 1 });
    expect(r.skippedPending.map((p) => p.id)).toEqual([orderId(8102)]);
    expect(await rowOf(8100)).toMatchObject({ row_version: 2, title: 'newer', amount: null });
    expect((await rowOf(8101))._deleted_at).toBeNull();
    expect((await rowOf(8102)).row_version).toBe(1);
    expect((await rowOf(8104)).title).toBe('Order 8104');
  });
  it('undoes a large copy when a stored ID turns up past its first slice, and counts each failed value once', async () => {
    await upsertItems(t.db, m, [orderItem(30_700, 1)], ZONE);
    const outboxBefore = await outboxCount();
    const sent = items(30_000, 31_000).map((it, i) => (i === 100 || i === 950 ? { ...it, Amount: 'abc' } : it));
    const r = await t.db.transaction((trx) => upsertItems(trx, m, sent, ZONE, { expectNew: true }));
    expect(r).toMatchObject({ inserted: 999, updated: 0, unchanged: 1, failedValues: 2 });
    expect(r.failures.map((f) => f.id)).toEqual([orderId(30_100), orderId(30_950)]);
    expect(await rowOf(30_999)).toMatchObject({ row_version: 1, title: 'Order 30999' });
    // The writer mark came before the savepoint the undone COPY rolled back to: the rows written
    // after it are still listsync's own, not local creates waiting to be pushed.
    expect(await outboxCount()).toBe(outboxBefore);
  });

  it('costs one round trip before the COPY of a first-load batch (writer mark, savepoint and time together) and none after it', async () => {
    const statements: string[] = [];
    const onQuery = (q: { sql: string }): void => void statements.push(q.sql);
    t.db.on('query', onQuery);
    try {
      const r = await t.db.transaction((trx) => upsertItems(trx, m, items(32_000, 33_000), ZONE, { expectNew: true }));
      expect(r).toMatchObject({ inserted: 1000, updated: 0, unchanged: 0 });
    } finally {
      t.db.removeListener('query', onQuery);
    }
    expect(statements.map((s) => s.replace(/\s+/g, ' ').trim())).toEqual([
      'BEGIN;',
      "select set_config('listsync.writer', 'on', true); savepoint listsync_copy; select now()::text as now",
      'COMMIT;',
    ]);
    expect(await storedBetween(32_000, 32_999)).toBe(1000);
  });
});

describe('upsertUsers', () => {
  it('inserts, leaves unchanged users alone and updates changed ones', async () => {
    await ensureUsersTable(t.db, 'mirror', 'platform_users');
    const users = [
      { UserID: 'u1', Name: 'Ann', Email: 'ann@example.com', Account: 'ann', LineManager: 'u2' },
      { UserID: 'u2', Name: 'Bob', Photo: 'https://x/b.png' },
      { Name: 'nobody' },
    ];
    expect(await upsertUsers(t.db, 'mirror', 'platform_users', users)).toEqual({ inserted: 2, updated: 0, unchanged: 0, invalid: 1 });
    expect(await upsertUsers(t.db, 'mirror', 'platform_users', users)).toEqual({ inserted: 0, updated: 0, unchanged: 2, invalid: 1 });
    expect(await upsertUsers(t.db, 'mirror', 'platform_users', [{ ...users[0], Name: 'Anne' }, users[1]!])).toEqual({
      inserted: 0,
      updated: 1,
      unchanged: 1,
      invalid: 0,
    });
    const row = await t.db('platform_users').withSchema('mirror').where({ user_id: 'u1' }).first();
    expect(row).toMatchObject({ user_id: 'u1', name: 'Anne', email: 'ann@example.com', account: 'ann', line_manager: 'u2', photo: null });
  });
});
