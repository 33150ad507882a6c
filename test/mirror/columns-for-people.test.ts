/**
 * Display-named columns that stay put (renames on the platform, collisions,
 * pins, mirrors made by earlier versions) and typed columns re-derived from
 * `_raw` when the settings they were converted under change.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMirrorTable, readRegistry, upsertItems, type EnsureMirrorTableOptions } from '../../src/mirror/index.js';
import type { FieldMeta, Item } from '../../src/platform/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t?.drop());

const SYSTEM: FieldMeta[] = [
  { FieldName: 'ListDataID', Type: 'input', IsSystem: true },
  { FieldName: 'Title', DisplayName: 'Title', Type: 'input', IsSystem: true, IsIndex: true },
  { FieldName: 'Created', DisplayName: 'Created', Type: 'datepicker', IsSystem: true, IsIndex: true },
  { FieldName: 'Modified', DisplayName: 'Modified', Type: 'datepicker', IsSystem: true, IsIndex: true },
];
/** The likeliest REST shape: the control in `Type`, no `FieldType`, storage slots as names. */
const FIELDS: FieldMeta[] = [
  ...SYSTEM,
  { FieldName: 'Text1', DisplayName: 'Status', Type: 'radio' },
  { FieldName: 'Bigint1', DisplayName: 'Amount', Type: 'input_number' },
  { FieldName: 'Datetime1', DisplayName: 'Shipped at', Type: 'datepicker', Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } },
  { FieldName: 'Bit1', DisplayName: 'Paid', Type: 'switch' },
];

let n = 0;
function opts(fields: FieldMeta[], extra: Partial<EnsureMirrorTableOptions> = {}): EnsureMirrorTableOptions {
  return {
    schema: 'mirror',
    list: { name: `l${n}`, appID: 'a', listID: `l${n}`, table: `t${n}` },
    fields,
    idField: 'ListDataID',
    versionField: 'RowVersion',
    ...extra,
  };
}

async function columns(table: string): Promise<Record<string, string>> {
  const r = (await t.db.raw(
    `select column_name, data_type from information_schema.columns where table_schema = 'mirror' and table_name = ? order by ordinal_position`,
    [table],
  )) as { rows: { column_name: string; data_type: string }[] };
  return Object.fromEntries(r.rows.map((c) => [c.column_name, c.data_type]));
}

describe('columns named for people', () => {
  it('names typed columns from display names, and comments them with the field name, storage and control', async () => {
    n++;
    const m = await ensureMirrorTable(t.db, opts(FIELDS));
    expect(await columns(`t${n}`)).toMatchObject({
      title: 'text',
      status: 'text',
      amount: 'numeric',
      shipped_at: 'timestamp with time zone',
      paid: 'boolean',
    });
    expect(m.columnFor('Bigint1')).toMatchObject({ field: 'Bigint1', column: 'amount', kind: 'numeric' });
    const comment = (
      await t.db.raw(
        `select col_description('mirror.t${n}'::regclass, attnum) as c from pg_attribute where attrelid = 'mirror.t${n}'::regclass and attname = 'amount'`,
      )
    ).rows[0].c;
    expect(comment).toBe('"Amount" (platform field Bigint1, storage Bigint, control input_number)');
    const reg = await readRegistry(t.db, `l${n}`);
    expect(reg?.fields.find((f) => f.field === 'Bigint1')).toMatchObject({
      storage: 'Bigint',
      control: 'input_number',
      kindSource: 'field name',
      displayName: 'Amount',
    });
  });

  it('keeps the column of a field renamed on the platform, and suffixes a new field whose display name collides', async () => {
    n++;
    await ensureMirrorTable(t.db, opts(FIELDS));
    const renamed = FIELDS.map((f) => (f.FieldName === 'Text1' ? { ...f, DisplayName: 'Order state' } : f));
    const next = [...renamed, { FieldName: 'Text2', DisplayName: 'Amount', Type: 'input' }];
    const m = await ensureMirrorTable(t.db, opts(next));
    expect(m.columnFor('Text1')?.column).toBe('status');
    expect(m.columnFor('Text2')?.column).toBe('amount_2');
    expect(m.changes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/field Text1 is now called "Order state" on the platform \(was "Status"\); column status keeps its name/),
        expect.stringMatching(/added column amount_2 \(text\) for new field Text2/),
      ]),
    );
    const comment = (
      await t.db.raw(
        `select col_description('mirror.t${n}'::regclass, attnum) as c from pg_attribute where attrelid = 'mirror.t${n}'::regclass and attname = 'status'`,
      )
    ).rows[0].c;
    expect(comment).toMatch(/^"Order state" \(platform field Text1/);
    expect((await ensureMirrorTable(t.db, opts(next))).changes).toEqual([]);
  });

  it('lets lists[].columns win over display names and collisions, renaming an existing column', async () => {
    n++;
    await ensureMirrorTable(t.db, opts(FIELDS));
    await t.db.transaction(async (trx) => {
      await trx.raw(`select set_config('listsync.writer', 'on', true)`);
      await trx.raw(`insert into mirror.t${n} (id, row_version, status) values ('1', 1, 'Open')`);
    });
    const m = await ensureMirrorTable(
      t.db,
      opts([...FIELDS, { FieldName: 'Text2', DisplayName: 'Status', Type: 'input' }], {
        columns: { Text2: 'status_text', Text1: 'state' },
      }),
    );
    expect(m.columnFor('Text1')?.column).toBe('state');
    expect(m.columnFor('Text2')?.column).toBe('status_text');
    expect(m.changes).toEqual(expect.arrayContaining([expect.stringMatching(/renamed column status to state for field Text1/)]));
    expect((await t.db.raw(`select state from mirror.t${n} where id = '1'`)).rows[0].state).toBe('Open');
    await expect(ensureMirrorTable(t.db, opts(FIELDS, { columns: { Bigint1: 'paid' } }))).rejects.toThrow(/pinned .*holds field Bit1/);
  });

  it('upgrades a mirror whose columns were named from field names without renaming anything', async () => {
    n++;
    const old = await ensureMirrorTable(t.db, opts(FIELDS, { columnNames: 'field' }));
    expect(old.columnFor('Text1')?.column).toBe('text1');
    const m = await ensureMirrorTable(t.db, opts([...FIELDS, { FieldName: 'Text2', DisplayName: 'Customer', Type: 'input' }]));
    expect(m.columns.map((c) => c.column)).toEqual(['title', 'text1', 'bigint1', 'datetime1', 'bit1', 'customer']);
    expect(Object.keys(await columns(`t${n}`))).toEqual(expect.arrayContaining(['text1', 'bigint1', 'customer']));
  });
});

describe('typed columns re-derived from _raw', () => {
  const item = (id: string, shipped: string): Item => ({
    ListDataID: id,
    RowVersion: 1,
    Title: 't',
    Created: '2026-03-01 08:00:00',
    Modified: '2026-03-01 09:00:00',
    Datetime1: shipped,
    Bigint1: '7',
  });

  it('rewrites date-times and system times when the platform time zone changes, leaving rows with open changes alone', async () => {
    n++;
    const m = await ensureMirrorTable(t.db, opts(FIELDS, { timeZone: 'UTC' }));
    await upsertItems(
      t.db,
      m,
      [item('1', '2026-07-01 12:00:00'), item('2', '2026-01-15 23:30:00'), item('3', '2026-01-15 10:00:00')],
      'UTC',
    );
    // A local edit to row 3 is pending: its values are the user's until write-back settles them.
    await t.db.raw(`update mirror.t${n} set amount = 8 where id = '3'`);
    const again = await ensureMirrorTable(t.db, opts(FIELDS, { timeZone: 'Europe/Berlin' }));
    expect(again.changes).toEqual([
      expect.stringMatching(
        /re-derived created_at, modified_at, shipped_at of 2 row\(s\) from _raw \(platform\.timeZone changed from UTC to Europe\/Berlin\)/,
      ),
    ]);
    const rows = (await t.db.raw(`select id, shipped_at, modified_at, amount from mirror.t${n} order by id`)).rows as {
      id: string;
      shipped_at: Date;
      modified_at: Date;
    }[];
    expect(rows.map((r) => [r.id, r.shipped_at.toISOString(), r.modified_at.toISOString()])).toEqual([
      ['1', '2026-07-01T10:00:00.000Z', '2026-03-01T08:00:00.000Z'],
      ['2', '2026-01-15T22:30:00.000Z', '2026-03-01T08:00:00.000Z'],
      ['3', '2026-01-15T10:00:00.000Z', '2026-03-01T09:00:00.000Z'],
    ]);
    expect((await readRegistry(t.db, `l${n}`))?.conversion).toEqual({ timeZone: 'Europe/Berlin' });
    expect((await ensureMirrorTable(t.db, opts(FIELDS, { timeZone: 'Europe/Berlin' }))).changes).toEqual([]);
  });

  it("a column widened to text holds the platform's text, not a cast of the old type", async () => {
    n++;
    const sameField = FIELDS.map((f) => (f.FieldName === 'Datetime1' ? { ...f, FieldID: 'f-shipped' } : f));
    const m = await ensureMirrorTable(t.db, opts(sameField, { timeZone: 'UTC' }));
    await upsertItems(t.db, m, [item('1', '2026-07-01 12:00:00')], 'UTC');
    const widened = sameField.map((f) => (f.FieldName === 'Datetime1' ? { ...f, FieldType: 'Text', Type: 'input' } : f));
    const next = await ensureMirrorTable(t.db, opts(widened, { timeZone: 'UTC' }));
    expect(next.changes).toEqual(
      expect.arrayContaining([expect.stringMatching(/re-derived shipped_at of 1 row\(s\) from _raw \(widened to text: shipped_at\)/)]),
    );
    expect((await t.db.raw(`select shipped_at from mirror.t${n}`)).rows[0].shipped_at).toBe('2026-07-01 12:00:00');
  });
});
