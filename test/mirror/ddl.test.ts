import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureMirrorTable,
  ensureUsersTable,
  loadTableMapping,
  readRegistry,
  type EnsureMirrorTableOptions,
} from '../../src/mirror/index.js';
import type { FieldMeta } from '../../src/platform/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ORDERS_FIELDS, ORDERS_LIST } from './fixtures.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t?.drop());

const options = (list: EnsureMirrorTableOptions['list'], fields: FieldMeta[], schema = 'mirror'): EnsureMirrorTableOptions => ({
  schema,
  list,
  fields,
  idField: 'ListDataID',
  versionField: 'RowVersion',
});

async function columnTypes(schema: string, table: string): Promise<Record<string, string>> {
  const rows = (await t.db.raw(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type from pg_attribute a
      where a.attrelid = to_regclass(?) and a.attnum > 0 and not a.attisdropped order by a.attnum`,
    [`"${schema}"."${table}"`],
  )) as { rows: { name: string; type: string }[] };
  return Object.fromEntries(rows.rows.map((r) => [r.name, r.type]));
}

describe('ensureMirrorTable: creation', () => {
  const hostile: FieldMeta = { FieldName: 'x"; drop table y; --', FieldType: 'Text', Type: 'input' };

  beforeAll(async () => {
    // A table the hostile field name "targets", with a row in it.
    await t.db.raw('create table public.y (v int)');
    await t.db.raw('insert into public.y values (1)');
  });

  it('creates schema and table with typed columns from the field list', async () => {
    const m = await ensureMirrorTable(t.db, options(ORDERS_LIST, [...ORDERS_FIELDS, hostile]));
    expect(m.changes).toEqual([expect.stringMatching(/created table mirror\.orders with 14 field column/)]);
    const types = await columnTypes('mirror', 'orders');
    expect(types).toMatchObject({
      id: 'text',
      row_version: 'bigint',
      created_at: 'timestamp with time zone',
      modified_at: 'timestamp with time zone',
      title: 'text',
      order_date: 'date',
      delivered_at: 'timestamp with time zone',
      amount: 'numeric',
      quantity: 'numeric',
      paid: 'boolean',
      tags: 'text[]',
      customer: 'text',
      status: 'text',
      attachment: 'jsonb',
      notes: 'text',
      created_by: 'text',
      modified_by: 'text',
      x_drop_table_y: 'text',
      _raw: 'jsonb',
      _synced_at: 'timestamp with time zone',
      _deleted_at: 'timestamp with time zone',
    });
    // No column for the fields held by the fixed columns.
    expect(Object.keys(types)).not.toContain('list_data_id');
    expect(Object.keys(types)).not.toContain('row_version_2');
    expect(m.columns.find((c) => c.field === hostile.FieldName)).toEqual({
      field: hostile.FieldName,
      column: 'x_drop_table_y',
      kind: 'text',
    });
    // Nothing was dropped.
    expect((await t.db.raw('select v from public.y')).rows).toEqual([{ v: 1 }]);
  });

  it('gives locally inserted rows a provisional local- id', async () => {
    const r = await t.db.transaction(async (trx) => {
      await trx.raw(`select set_config('listsync.writer', 'on', true)`);
      const res = (await trx.raw(`insert into mirror.orders (title) values ('x') returning id`)) as { rows: { id: string }[] };
      await trx.raw('delete from mirror.orders');
      return res.rows[0]!.id;
    });
    expect(r).toMatch(/^local-[0-9a-f-]{36}$/);
  });

  it('indexes modified_at and created_at', async () => {
    const rows = (await t.db.raw(`select indexdef from pg_indexes where schemaname = 'mirror' and tablename = 'orders'`)) as {
      rows: { indexdef: string }[];
    };
    const defs = rows.rows.map((r) => r.indexdef).join('\n');
    expect(defs).toMatch(/\(modified_at\)/);
    expect(defs).toMatch(/\(created_at\)/);
  });

  it('registers the list with its mapping and fingerprint', async () => {
    const reg = await readRegistry(t.db, 'orders');
    expect(reg).toMatchObject({ name: 'orders', appID: 'app1', listID: 'list1', table: 'orders' });
    expect(reg!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(reg!.fields.find((f) => f.field === 'Amount')).toMatchObject({
      column: 'amount',
      kind: 'numeric',
      fieldType: 'Decimal',
      type: 'input_number',
      removed: false,
    });
    expect(reg!.fields.find((f) => f.field === 'ListDataID')).toMatchObject({ column: 'id', fixed: true });
    const loaded = await loadTableMapping(t.db, 'mirror', 'orders');
    expect(loaded!.columns).toEqual((await ensureMirrorTable(t.db, options(ORDERS_LIST, [...ORDERS_FIELDS, hostile]))).columns);
    expect(loaded!.idField).toBe('ListDataID');
    expect(loaded!.qualifiedTable).toBe('"mirror"."orders"');
  });

  it('is a no-op when nothing changed, whatever the field order', async () => {
    const m = await ensureMirrorTable(t.db, options(ORDERS_LIST, [hostile, ...ORDERS_FIELDS].reverse()));
    expect(m.changes).toEqual([]);
    expect(m.columnFor('OrderDate')?.column).toBe('order_date');
  });

  it('refuses a second list on the same table', async () => {
    await expect(ensureMirrorTable(t.db, options({ ...ORDERS_LIST, name: 'other' }, ORDERS_FIELDS))).rejects.toThrow(
      /already mirrors list "orders"/,
    );
  });

  it('says to migrate when the capture function is missing', async () => {
    await expect(
      t.db.transaction(async (trx) => {
        await trx.raw('drop function listsync.mirror_capture() cascade');
        await ensureMirrorTable(trx, options({ ...ORDERS_LIST, name: 'nofn', table: 'nofn' }, ORDERS_FIELDS));
      }),
    ).rejects.toThrow(/listsync migrate/);
  });
});

describe('ensureMirrorTable: evolution', () => {
  const list = { name: 'evo', appID: 'a', listID: 'l', table: 'evo' };
  const base: FieldMeta[] = [
    { FieldName: 'ListDataID', FieldType: 'Text', Type: 'id' },
    { FieldName: 'RowVersion', FieldType: 'Bigint', Type: 'version' },
    // The same FieldID across a type change: the same field, its column widened (not a reused slot).
    { FieldName: 'Amount', FieldID: 'f-amount', FieldType: 'Bigint', Type: 'input_number' },
    { FieldName: 'When', FieldID: 'f-when', FieldType: 'Datetime', Type: 'datepicker', Rules: { DateFormat: 'yyyy-MM-dd' } },
    { FieldName: 'Obsolete', FieldType: 'Text', Type: 'input' },
  ];

  it('adds a column for a new field, widens a changed type to text and keeps removed columns', async () => {
    await ensureMirrorTable(t.db, options(list, base));
    await t.db.transaction(async (trx) => {
      await trx.raw(`select set_config('listsync.writer', 'on', true)`);
      await trx.raw(
        `insert into mirror.evo (id, row_version, amount, "when", obsolete) values ('1', 1, 12345678901234567890.50, '2026-01-02', 'keep me')`,
      );
    });

    const next: FieldMeta[] = [
      ...base.filter((f) => f.FieldName !== 'Obsolete' && f.FieldName !== 'Amount' && f.FieldName !== 'When'),
      { FieldName: 'Amount', FieldID: 'f-amount', FieldType: 'Text', Type: 'input' },
      { FieldName: 'When', FieldID: 'f-when', FieldType: 'Datetime', Type: 'datepicker', Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } },
      { FieldName: 'Fresh', FieldType: 'Bit', Type: 'switch' },
    ];
    const m = await ensureMirrorTable(t.db, options(list, next));
    expect(m.changes).toHaveLength(4);
    expect(m.changes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/added column fresh \(boolean\) for new field Fresh/),
        expect.stringMatching(/field Amount changed type .*numeric.*text.*widened to text/),
        expect.stringMatching(/field When changed type .*date.*timestamptz.*widened to text/),
        expect.stringMatching(/field Obsolete is no longer on the platform; column obsolete is kept/),
      ]),
    );
    const types = await columnTypes('mirror', 'evo');
    expect(types).toMatchObject({ amount: 'text', when: 'text', fresh: 'boolean', obsolete: 'text' });
    const row = (await t.db.raw('select amount, "when", obsolete, fresh from mirror.evo')).rows[0];
    expect(row).toEqual({ amount: '12345678901234567890.50', when: '2026-01-02', obsolete: 'keep me', fresh: null });
    expect(m.columnFor('Amount')).toEqual({ field: 'Amount', column: 'amount', kind: 'text' });
    expect(m.columnFor('Obsolete')).toBeUndefined();
    expect(m.removedColumns).toEqual([{ field: 'Obsolete', column: 'obsolete', kind: 'text' }]);

    // Running again reports nothing new.
    expect((await ensureMirrorTable(t.db, options(list, next))).changes).toEqual([]);
  });

  it('a text column stays text when the platform goes back to a narrower type; a returning field reuses its column', async () => {
    const back: FieldMeta[] = [...base, { FieldName: 'Fresh', FieldType: 'Bit', Type: 'switch' }];
    const m = await ensureMirrorTable(t.db, options(list, back));
    expect(m.changes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/field Amount is numeric on the platform but column amount is text; it stays text/),
        expect.stringMatching(/field Obsolete is back on the platform; column obsolete is written again/),
      ]),
    );
    expect(m.columnFor('Amount')?.kind).toBe('text');
    expect(m.columnFor('Obsolete')?.column).toBe('obsolete');
    expect(m.removedColumns).toEqual([]);
    expect((await t.db.raw('select amount, obsolete from mirror.evo')).rows[0]).toEqual({
      amount: '12345678901234567890.50',
      obsolete: 'keep me',
    });
    expect((await ensureMirrorTable(t.db, options(list, back))).changes).toEqual([]);
  });

  it('keeps column names stable when a colliding field appears later', async () => {
    const l2 = { name: 'stable', appID: 'a', listID: 'l2', table: 'stable' };
    const f1: FieldMeta[] = [{ FieldName: 'order_date', FieldType: 'Text', Type: 'input' }];
    expect((await ensureMirrorTable(t.db, options(l2, f1))).columnFor('order_date')?.column).toBe('order_date');
    // 'OrderDate' sorts before 'order_date' and would win a fresh assignment; the stored mapping keeps order_date.
    const m = await ensureMirrorTable(t.db, options(l2, [{ FieldName: 'OrderDate', FieldType: 'Text', Type: 'input' }, ...f1]));
    expect(m.columnFor('order_date')?.column).toBe('order_date');
    expect(m.columnFor('OrderDate')?.column).toBe('order_date_2');
  });

  it('runs concurrently without failing', async () => {
    const l3 = { name: 'race', appID: 'a', listID: 'l3', table: 'race' };
    const results = await Promise.all([1, 2, 3, 4].map(() => ensureMirrorTable(t.db, options(l3, base))));
    expect(results.filter((r) => r.changes.some((c) => c.startsWith('created table')))).toHaveLength(1);
  });
});

describe('ensureUsersTable', () => {
  it('creates the users directory table, idempotently', async () => {
    await ensureUsersTable(t.db, 'mirror', 'platform_users');
    await ensureUsersTable(t.db, 'mirror', 'platform_users');
    expect(Object.keys(await columnTypes('mirror', 'platform_users'))).toEqual([
      'user_id',
      'name',
      'email',
      'account',
      'photo',
      'line_manager',
      '_raw',
      '_synced_at',
    ]);
  });
});
