import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PG, pgCode } from '../../src/errors.js';
import {
  ensureMirrorTable,
  markListsyncWriter,
  pendingChanges,
  toPlatform,
  upsertItems,
  withListsyncWriter,
  type TableMapping,
} from '../../src/mirror/index.js';
import type { FieldMeta } from '../../src/platform/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ORDERS_FIELDS, orderId, orderItem, ordersTable } from './fixtures.js';

const ZONE = 'America/New_York';
let t: TestDatabase;
let m: TableMapping;

beforeAll(async () => {
  t = await createTestDatabase();
  m = await ensureMirrorTable(t.db, ordersTable());
});
afterAll(async () => t?.drop());

beforeEach(async () => {
  await t.db('outbox').withSchema('listsync').del();
  await withListsyncWriter(t.db, async (trx) => {
    await trx('orders').withSchema('mirror').del();
  });
  await upsertItems(t.db, m, [orderItem(1, 4), orderItem(2, 7), orderItem(3, 1)], ZONE);
});

const outbox = async () =>
  t.db('outbox').withSchema('listsync').orderBy('id').select('list_name', 'op', 'item_id', 'local_id', 'changes', 'base_version', 'status');
const row = async (id: string) => t.db('orders').withSchema('mirror').where({ id }).first();

describe('change capture', () => {
  it('records a user UPDATE with the changed columns and the old row_version as base', async () => {
    await t.db.raw(`update mirror.orders set title = 'Renamed', paid = false, amount = 12345678901234567890.123 where id = ?`, [
      orderId(1),
    ]);
    expect(await outbox()).toEqual([
      {
        list_name: 'orders',
        op: 'update',
        item_id: orderId(1),
        local_id: null,
        // numeric values travel as strings: every digit survives JSON.parse
        changes: { title: 'Renamed', paid: false, amount: '12345678901234567890.123' },
        base_version: 4,
        status: 'pending',
      },
    ]);
  });

  it('stores values the push conversion turns into the platform format', async () => {
    await t.db.raw(
      `update mirror.orders set delivered_at = '2026-03-08 03:30:00-04', order_date = '2026-03-09', tags = array['x','y'], quantity = 9007199254740993, notes = null where id = ?`,
      [orderId(1)],
    );
    const [change] = await pendingChanges(t.db, 'orders');
    const wire = Object.fromEntries(
      Object.entries(change!.changes).map(([col, v]) => [m.byColumn(col)!.field, toPlatform(m.byColumn(col)!.kind, v, ZONE)]),
    );
    expect(wire).toEqual({
      DeliveredAt: '2026-03-08 03:30:00',
      OrderDate: '2026-03-09',
      Tags: '["x","y"]',
      Quantity: '9007199254740993',
      Notes: '',
    });
  });

  it('coalesces several edits into one open change, keeping the first base version', async () => {
    await t.db.raw(`update mirror.orders set title = 'A' where id = ?`, [orderId(2)]);
    await t.db.raw(`update mirror.orders set notes = 'B' where id = ?`, [orderId(2)]);
    await t.db.raw(`update mirror.orders set title = 'C' where id = ?`, [orderId(2)]);
    expect(await outbox()).toEqual([
      expect.objectContaining({ op: 'update', item_id: orderId(2), changes: { title: 'C', notes: 'B' }, base_version: 7 }),
    ]);
  });

  it('records nothing for an UPDATE that changes nothing; one of listsync columns is refused', async () => {
    await t.db.raw(`update mirror.orders set title = title, amount = amount where id = ?`, [orderId(1)]);
    await t.db.raw(`update mirror.orders set _synced_at = _synced_at, _raw = _raw where id = ?`, [orderId(1)]);
    const err = await t.db
      .raw(`update mirror.orders set _synced_at = now(), _raw = '{}' where id = ?`, [orderId(1)])
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/column _raw of mirror\.orders is managed by listsync and cannot be changed/);
    expect(await outbox()).toEqual([]);
  });

  it('refuses changes to id, row_version, created_at and modified_at', async () => {
    for (const set of [`id = 'x'`, 'row_version = 99', 'created_at = now()', 'modified_at = now()']) {
      const err = await t.db.raw(`update mirror.orders set ${set} where id = ?`, [orderId(1)]).catch((e: unknown) => e);
      expect(pgCode(err)).toBe(PG.raiseException);
      expect((err as Error).message).toMatch(/is managed by listsync and cannot be changed/);
    }
    expect(await outbox()).toEqual([]);
    expect((await row(orderId(1))).row_version).toBe(4);
  });

  it('turns a user INSERT into a create with the provisional id, and merges later edits into it', async () => {
    const inserted = (
      await t.db.raw(`insert into mirror.orders (title, amount, tags) values ('New order', 10.50, array['a']) returning id`)
    ).rows[0].id as string;
    expect(inserted).toMatch(/^local-/);
    await t.db.raw(`update mirror.orders set notes = 'rush' where id = ?`, [inserted]);
    expect(await outbox()).toEqual([
      {
        list_name: 'orders',
        op: 'create',
        item_id: null,
        local_id: inserted,
        changes: { title: 'New order', amount: '10.50', tags: ['a'], notes: 'rush' },
        base_version: null,
        status: 'pending',
      },
    ]);
  });

  it('refuses a DELETE with a clear message and keeps the row', async () => {
    const err = await t.db.raw(`delete from mirror.orders where id = ?`, [orderId(3)]).catch((e: unknown) => e);
    expect(pgCode(err)).toBe(PG.raiseException);
    expect((err as Error).message).toContain(
      `listsync: deletes are not written back for list "orders" (lists[].pushDeletes is off); row ${orderId(3)} was not deleted.`,
    );
    expect(await row(orderId(3))).toBeTruthy();
    const trunc = await t.db.raw('truncate mirror.orders').catch((e: unknown) => e);
    expect((trunc as Error).message).toMatch(/truncating mirror\.orders is not supported/);
    expect(await row(orderId(3))).toBeTruthy();
  });

  it('never captures listsync writes; listsync may delete and rename rows', async () => {
    await t.db.transaction(async (trx) => {
      await markListsyncWriter(trx);
      await trx.raw(`update mirror.orders set title = 'by listsync' where id = ?`, [orderId(1)]);
      await trx.raw(`insert into mirror.orders (id, title) values ('local-abc', 'x')`);
      await trx.raw(`update mirror.orders set id = ? where id = 'local-abc'`, [orderId(99)]);
      await trx.raw(`delete from mirror.orders where id = ?`, [orderId(3)]);
    });
    expect(await outbox()).toEqual([]);
    expect(await row(orderId(99))).toBeTruthy();
    expect(await row(orderId(3))).toBeUndefined();
    // The setting is transaction-local: the next user statement is captured again.
    await t.db.raw(`update mirror.orders set title = 'by a user' where id = ?`, [orderId(1)]);
    expect(await outbox()).toHaveLength(1);
  });

  it('upsertItems skips a row with an open change and reports both versions', async () => {
    await t.db.raw(`update mirror.orders set title = 'local edit' where id = ?`, [orderId(2)]);
    const sent = orderItem(2, 8, { Title: 'remote edit' });
    const r = await upsertItems(t.db, m, [sent, orderItem(1, 5)], ZONE);
    expect(r.skippedPending).toEqual([{ id: orderId(2), remoteVersion: 8, baseVersion: 7, item: sent }]);
    expect(r.updated).toBe(1);
    expect(await row(orderId(2))).toMatchObject({ title: 'local edit', row_version: 7 });
    // Once the change is applied, the next pull overwrites the row again.
    await t.db('outbox').withSchema('listsync').update({ status: 'applied' });
    expect((await upsertItems(t.db, m, [sent], ZONE)).updated).toBe(1);
    expect(await row(orderId(2))).toMatchObject({ title: 'remote edit', row_version: 8 });
    expect(await outbox()).toHaveLength(1);
  });

  it("follows schema evolution: new columns are captured; an edit of a removed field's column is refused, not silently dropped", async () => {
    const fields: FieldMeta[] = [
      ...ORDERS_FIELDS.filter((f) => f.FieldName !== 'Notes'),
      { FieldName: 'Priority', FieldType: 'Text', Type: 'radio' },
    ];
    const evolved = await ensureMirrorTable(t.db, ordersTable(fields));
    const notesBefore = (await t
      .db('mirror.orders')
      .where({ id: orderId(1) })
      .first('notes')) as { notes: string | null };
    await expect(t.db.raw(`update mirror.orders set priority = 'high', notes = 'ignored' where id = ?`, [orderId(1)])).rejects.toThrow(
      /column notes of mirror\.orders keeps the data of a field that was removed from the platform/,
    );
    expect(
      await t
        .db('mirror.orders')
        .where({ id: orderId(1) })
        .first('notes'),
    ).toEqual(notesBefore);
    expect(await outbox()).toEqual([]);
    await expect(t.db.raw(`insert into mirror.orders (notes) values ('new')`)).rejects.toThrow(/removed from the platform/);
    await t.db.raw(`update mirror.orders set priority = 'high' where id = ?`, [orderId(1)]);
    expect((await outbox())[0]!.changes).toEqual({ priority: 'high' });
    m = await ensureMirrorTable(t.db, ordersTable());
    expect(evolved.removedColumns.map((c) => c.column)).toEqual(['notes']);
  });
});
