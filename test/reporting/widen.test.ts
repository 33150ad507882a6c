/**
 * A field widened to text under the reporting views: Postgres cannot change
 * the type of a column a view reads, and `create or replace view` cannot
 * change a view column's type. Reports built on the view must keep working.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMirrorTable, upsertItems, type EnsureMirrorTableOptions } from '../../src/mirror/index.js';
import type { FieldMeta } from '../../src/platform/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t?.drop());

const SYSTEM: FieldMeta[] = [
  { FieldName: 'ListDataID', Type: 'input', IsSystem: true },
  { FieldName: 'Created', DisplayName: 'Created', Type: 'datepicker', IsSystem: true, IsIndex: true },
  { FieldName: 'Modified', DisplayName: 'Modified', Type: 'datepicker', IsSystem: true, IsIndex: true },
];
// One FieldID: the same field changing type (a new FieldID would be another field in the slot).
const NUMBER: FieldMeta[] = [...SYSTEM, { FieldName: 'Bigint1', FieldID: '11', DisplayName: 'Amount', Type: 'input_number' }];
const TEXT: FieldMeta[] = [...SYSTEM, { FieldName: 'Bigint1', FieldID: '11', DisplayName: 'Amount', FieldType: 'Text', Type: 'input' }];

function opts(n: number, fields: FieldMeta[], history = false): EnsureMirrorTableOptions {
  return {
    schema: 'mirror',
    list: { name: `w${n}`, appID: 'a', listID: `w${n}`, table: `w${n}` },
    fields,
    idField: 'ListDataID',
    versionField: 'RowVersion',
    reportingSchema: 'reporting',
    history,
  };
}

const items = [
  { ListDataID: '1', RowVersion: 1, Bigint1: '10', Created: '2026-01-01 00:00:00', Modified: '2026-01-01 00:00:00' },
  { ListDataID: '2', RowVersion: 1, Bigint1: '32', Created: '2026-01-01 00:00:00', Modified: '2026-01-01 00:00:00' },
];

async function viewColumns(view: string): Promise<Record<string, string>> {
  const r = (await t.db.raw(
    `select column_name, data_type from information_schema.columns where table_schema = 'reporting' and table_name = ? order by ordinal_position`,
    [view],
  )) as {
    rows: { column_name: string; data_type: string }[];
  };
  return Object.fromEntries(r.rows.map((c) => [c.column_name, c.data_type]));
}

describe('a widened field under the reporting views', () => {
  it('with a report built on the view: the column keeps its type and the text is appended as <column>_text', async () => {
    const m = await ensureMirrorTable(t.db, opts(1, NUMBER, true));
    await upsertItems(t.db, m, items, 'UTC');
    await t.db.raw('create view public.w1_total as select sum(amount) as total from reporting.w1');
    const widened = await ensureMirrorTable(t.db, opts(1, TEXT, true));
    expect(widened.schemaChanges?.map((c) => c.kind)).toContain('widened');
    await upsertItems(t.db, widened, [{ ...items[0]!, RowVersion: 2, Bigint1: 'twelve' }], 'UTC');

    expect(await viewColumns('w1')).toMatchObject({ amount: 'numeric', amount_text: 'text' });
    const r = (await t.db.raw('select amount, amount_text from reporting.w1 order by id')).rows as {
      amount: string | null;
      amount_text: string;
    }[];
    expect(r).toEqual([
      { amount: null, amount_text: 'twelve' },
      { amount: '32', amount_text: '32' },
    ]);
    expect((await t.db.raw('select total from public.w1_total')).rows[0].total).toBe('32');
    // The history table and its view were widened alongside.
    expect(
      (
        await t.db.raw(
          `select data_type from information_schema.columns where table_schema = 'mirror' and table_name = 'w1_history' and column_name = 'amount'`,
        )
      ).rows[0].data_type,
    ).toBe('text');
  });

  it('with nothing built on the view: the view is recreated with the column as text, in the same place', async () => {
    const m = await ensureMirrorTable(t.db, opts(2, NUMBER));
    await upsertItems(t.db, m, items, 'UTC');
    const before = Object.keys(await viewColumns('w2'));
    await ensureMirrorTable(t.db, opts(2, TEXT));
    const after = await viewColumns('w2');
    expect(Object.keys(after)).toEqual(before);
    expect(after.amount).toBe('text');
    const comment = (await t.db.raw(`select col_description('reporting.w2'::regclass, 2) as c`)).rows[0].c as string;
    expect(comment).toContain('platform field Bigint1');
  });

  it('a column pinned to another name is renamed in the history table and the views too; views built on them keep working', async () => {
    const m = await ensureMirrorTable(t.db, opts(3, NUMBER, true));
    await upsertItems(t.db, m, items, 'UTC');
    await t.db.raw('create view public.w3_sum as select sum(amount) as total from reporting.w3');
    await ensureMirrorTable(t.db, { ...opts(3, NUMBER, true), columns: { Bigint1: 'total_amount' } });
    expect(Object.keys(await viewColumns('w3'))).toContain('total_amount');
    expect(Object.keys(await viewColumns('w3_history'))).toContain('total_amount');
    expect((await t.db.raw('select total_amount from reporting.w3 order by id')).rows).toEqual([
      { total_amount: '10' },
      { total_amount: '32' },
    ]);
    expect((await t.db.raw('select total from public.w3_sum')).rows[0].total).toBe('42');
  });
});
