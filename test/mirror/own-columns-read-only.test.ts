/**
 * listsync's own columns of a mirror table are read-only to SQL: `_raw`,
 * `_synced_at` and `_deleted_at` are refused with a message naming the
 * column, as `id`, `row_version`, `created_at` and `modified_at` are
 * (migration 20261130030000_own_columns_read_only). listsync's own writes
 * (marked `listsync.writer = on`) still change them, and a captured DELETE
 * still marks its row `_deleted_at` without hiding the user's next
 * statements from the capture.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PG, pgCode } from '../../src/errors.js';
import { ensureMirrorTable, upsertItems, withListsyncWriter, type TableMapping } from '../../src/mirror/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { orderId, orderItem, ordersTable } from './fixtures.js';

const ZONE = 'UTC';
let t: TestDatabase;
let m: TableMapping;

beforeAll(async () => {
  t = await createTestDatabase();
  m = await ensureMirrorTable(t.db, { ...ordersTable(), pushDeletes: true });
});
afterAll(async () => t?.drop());

beforeEach(async () => {
  await t.db('outbox').withSchema('listsync').del();
  await withListsyncWriter(t.db, async (trx) => {
    await trx('orders').withSchema('mirror').del();
  });
  await upsertItems(t.db, m, [orderItem(1, 4), orderItem(2, 7)], ZONE);
});

const ownColumns = async (id: string) =>
  (await t.db('orders').withSchema('mirror').where({ id }).first('_raw', '_synced_at', '_deleted_at')) as Record<string, unknown>;
const outbox = async () => t.db('outbox').withSchema('listsync').orderBy('id').select('op', 'item_id', 'changes');
const refusal = (sql: string, bindings: readonly string[] = []) => t.db.raw(sql, bindings).catch((e: unknown) => e);

describe("listsync's own columns", () => {
  it('refuses an UPDATE of _raw, _synced_at or _deleted_at, naming the column, and changes nothing', async () => {
    const before = await ownColumns(orderId(1));
    for (const [column, set] of [
      ['_raw', `_raw = '{}'`],
      ['_synced_at', '_synced_at = now()'],
      ['_deleted_at', '_deleted_at = now()'],
    ] as const) {
      const err = await refusal(`update mirror.orders set ${set} where id = ?`, [orderId(1)]);
      expect(pgCode(err), column).toBe(PG.raiseException);
      expect((err as Error).message).toContain(`column ${column} of mirror.orders is managed by listsync and cannot be changed`);
      expect((err as Error).message).toContain(`row ${orderId(1)}`);
    }
    // Beside a field column, in one statement: the whole statement is refused.
    const both = await refusal(`update mirror.orders set title = 'Edited', _deleted_at = now() where id = ?`, [orderId(1)]);
    expect((both as Error).message).toContain('column _deleted_at of mirror.orders is managed by listsync');
    expect(await ownColumns(orderId(1))).toEqual(before);
    expect(await outbox()).toEqual([]);
  });

  it('refuses an INSERT that sets _raw, _synced_at or _deleted_at', async () => {
    for (const column of ['_raw', '_synced_at', '_deleted_at']) {
      const value = column === '_raw' ? `'{"Title":"x"}'::jsonb` : 'now()';
      const err = await refusal(`insert into mirror.orders (title, ${column}) values ('New', ${value})`);
      expect(pgCode(err), column).toBe(PG.raiseException);
      expect((err as Error).message).toContain(`column ${column} of mirror.orders is managed by listsync`);
    }
    expect(await outbox()).toEqual([]);
    // Without them, an INSERT is a create, as before.
    await t.db.raw(`insert into mirror.orders (title) values ('New')`);
    expect((await outbox()).map((o) => o.op)).toEqual(['create']);
  });

  it("listsync's own writes still set them", async () => {
    await withListsyncWriter(t.db, async (trx) => {
      await trx.raw(`update mirror.orders set _deleted_at = '2026-01-02T00:00:00Z', _raw = '{"a":1}' where id = ?`, [orderId(2)]);
    });
    expect(await ownColumns(orderId(2))).toMatchObject({ _raw: { a: 1 }, _deleted_at: new Date('2026-01-02T00:00:00Z') });
    // A pull's upsert rewrites a newer version's _raw and _synced_at.
    const before = await ownColumns(orderId(1));
    await upsertItems(t.db, m, [orderItem(1, 5)], ZONE);
    const after = await ownColumns(orderId(1));
    expect(after._raw).not.toEqual(before._raw);
    expect(await outbox()).toEqual([]);
  });

  it('a captured DELETE marks its row deleted, and the next statement of the transaction is still captured', async () => {
    await t.db.transaction(async (trx) => {
      await trx.raw('delete from mirror.orders where id = ?', [orderId(1)]);
      await trx.raw(`update mirror.orders set title = 'After the delete' where id = ?`, [orderId(2)]);
      const refused = await trx
        .raw(`savepoint s; update mirror.orders set _deleted_at = now() where id = '${orderId(2)}'`)
        .catch((e: unknown) => e);
      expect((refused as Error).message).toContain('column _deleted_at of mirror.orders is managed by listsync');
      await trx.raw('rollback to savepoint s');
    });
    expect((await ownColumns(orderId(1)))._deleted_at).toBeInstanceOf(Date);
    expect((await ownColumns(orderId(2)))._deleted_at).toBeNull();
    expect((await outbox()).map((o) => [o.op, o.item_id])).toEqual([
      ['delete', orderId(1)],
      ['update', orderId(2)],
    ]);
  });
});
