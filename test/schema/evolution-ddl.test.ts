/**
 * Schema evolution at the table level (real PostgreSQL): generated names fit 63 bytes, columns named
 * like listsync's own before the name was reserved are healed, field names are taken exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMirrorTable, upsertItems, type EnsureMirrorTableOptions } from '../../src/mirror/index.js';
import { normalizeFields } from '../../src/platform/field-meta.js';
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
const item = (id: string, values: Record<string, string>) => ({
  ListDataID: id,
  RowVersion: 1,
  Created: '2026-01-01 00:00:00',
  Modified: '2026-01-01 00:00:00',
  ...values,
});

function opts(name: string, fields: FieldMeta[], more: Partial<EnsureMirrorTableOptions> = {}): EnsureMirrorTableOptions {
  return {
    schema: 'mirror',
    list: { name, appID: 'a', listID: name, table: name },
    fields: [...SYSTEM, ...fields],
    idField: 'ListDataID',
    versionField: 'RowVersion',
    reportingSchema: 'reporting',
    ...more,
  };
}

const columnsOf = async (schema: string, relation: string): Promise<Record<string, string>> =>
  Object.fromEntries(
    (
      (await t.db.raw(
        `select attname as name, format_type(atttypid, atttypmod) as type from pg_attribute
          where attrelid = to_regclass(?) and attnum > 0 and not attisdropped`,
        [`"${schema}"."${relation}"`],
      )) as { rows: { name: string; type: string }[] }
    ).rows.map((r) => [r.name, r.type]),
  );

describe('generated identifiers', () => {
  it('a 63-byte column widened to text under a view someone built on it: the text copy fits 63 bytes', async () => {
    const long = 'a'.repeat(63);
    const number: FieldMeta = { FieldName: 'Bigint1', FieldID: '7', DisplayName: long, FieldType: 'Bigint', Type: 'input_number' };
    const m = await ensureMirrorTable(t.db, opts('wide', [number], { history: true }));
    await upsertItems(t.db, m, [item('1', { Bigint1: '12' })], 'UTC');
    await t.db.raw(`create view public.wide_report as select "${long}" as n from reporting.wide`);

    const widened = await ensureMirrorTable(t.db, opts('wide', [{ ...number, FieldType: 'Text', Type: 'input' }], { history: true }));
    expect(widened.schemaChanges?.map((c) => c.kind)).toContain('widened');
    await upsertItems(t.db, widened, [{ ...item('1', { Bigint1: 'twelve' }), RowVersion: 2 }], 'UTC');
    const view = await columnsOf('reporting', 'wide');
    const copy = Object.keys(view).find((c) => c !== long && c.startsWith('aaaa'))!;
    expect(Buffer.byteLength(copy)).toBeLessThanOrEqual(63);
    expect(copy).toMatch(/_text$/);
    const row = (await t.db.raw(`select * from reporting.wide`)).rows[0] as Record<string, unknown>;
    expect(row[copy]).toBe('twelve');
    expect((await t.db.raw('select n from public.wide_report')).rows).toEqual([{ n: null }]);
    // Again: nothing new, nothing fails.
    expect(
      (await ensureMirrorTable(t.db, opts('wide', [{ ...number, FieldType: 'Text', Type: 'input' }], { history: true }))).changes,
    ).toEqual([]);
  });

  it('a reused slot whose column already has 63 bytes keeps it under a name that fits', async () => {
    const long = 'b'.repeat(63);
    const m = await ensureMirrorTable(
      t.db,
      opts('longslot', [{ FieldName: 'Text1', FieldID: '1', DisplayName: long, FieldType: 'Text', Type: 'input' }]),
    );
    await upsertItems(t.db, m, [item('1', { Text1: 'old' })], 'UTC');
    const next = await ensureMirrorTable(
      t.db,
      opts('longslot', [{ FieldName: 'Text1', FieldID: '2', DisplayName: 'New', FieldType: 'Text', Type: 'input' }]),
    );
    const kept = next.removedColumns[0]!.column;
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(63);
    expect(kept).toMatch(/_removed$/);
    expect((await t.db.raw(`select "${kept}" as v, new from mirror.longslot`)).rows).toEqual([{ v: 'old', new: null }]);
  });
});

describe('fields that go away', () => {
  it('a removed field keeps its column and its _raw value when the row is rewritten without it', async () => {
    const notes: FieldMeta = { FieldName: 'Text1', FieldID: '1', DisplayName: 'Notes', FieldType: 'Text', Type: 'textarea' };
    const title: FieldMeta = { FieldName: 'Title', FieldType: 'Text', Type: 'input' };
    const m = await ensureMirrorTable(t.db, opts('gone', [title, notes]));
    await upsertItems(t.db, m, [item('1', { Title: 'a', Text1: 'keep me' })], 'UTC');
    const without = await ensureMirrorTable(t.db, opts('gone', [title]));
    expect(without.schemaChanges?.map((c) => c.kind)).toEqual(['removed']);
    await upsertItems(t.db, without, [{ ...item('1', { Title: 'b' }), RowVersion: 2 }], 'UTC');
    const row = (await t.db.raw('select title, notes, _raw from mirror.gone')).rows[0];
    expect(row).toMatchObject({ title: 'b', notes: 'keep me' });
    expect(row._raw).toMatchObject({ Title: 'b', Text1: 'keep me' });
  });

  it('without FieldIDs, another control in the slot is another field: the old column is kept, the new one fresh', async () => {
    const before: FieldMeta = { FieldName: 'Text4', DisplayName: 'Notes', FieldType: 'Text', Type: 'textarea' };
    const m = await ensureMirrorTable(t.db, opts('noid', [before]));
    await upsertItems(t.db, m, [item('1', { Text4: 'old note' })], 'UTC');
    const next = await ensureMirrorTable(t.db, opts('noid', [{ ...before, DisplayName: 'Priority', Type: 'radio' }]));
    expect(next.schemaChanges?.map((c) => c.kind).sort()).toEqual(['added', 'slot-reused']);
    expect(next.columnFor('Text4')?.column).toBe('priority');
    const row = (await t.db.raw('select notes_removed, priority, _raw from mirror.noid')).rows[0];
    expect(row).toMatchObject({ notes_removed: 'old note', priority: null });
    expect(row._raw).toMatchObject({ 'Text4@notes_removed': 'old note' });
    expect(row._raw).not.toHaveProperty('Text4');
  });
});

describe("columns named like listsync's own", () => {
  it('an existing field column called synced_at (made before the name was reserved) is renamed; views show both', async () => {
    const field: FieldMeta = { FieldName: 'Text3', FieldID: '3', DisplayName: 'Synced At', FieldType: 'Text', Type: 'input' };
    // As an older listsync made it: the field's column took the name the view uses for _synced_at.
    const m = await ensureMirrorTable(t.db, opts('heal', [field], { reportingSchema: null, columns: { Text3: 'synced_at' } }));
    await upsertItems(t.db, m, [item('1', { Text3: 'field value' })], 'UTC');

    const healed = await ensureMirrorTable(t.db, opts('heal', [field], { history: true }));
    expect(healed.columnFor('Text3')?.column).toBe('synced_at_2');
    expect(healed.changes.join('\n')).toMatch(/renamed column synced_at to synced_at_2 for field Text3: listsync uses "synced_at" itself/);
    const live = (await t.db.raw('select synced_at, synced_at_2 from reporting.heal')).rows[0];
    expect(live.synced_at).toBeInstanceOf(Date);
    expect(live.synced_at_2).toBe('field value');
    expect(await columnsOf('mirror', 'heal_history')).toMatchObject({ valid_from: 'timestamp with time zone', synced_at_2: 'text' });
  });
});

describe('field names taken exactly as sent', () => {
  it('names that differ only by surrounding spaces are two fields with two columns', async () => {
    const fields = normalizeFields([
      { FieldName: 'Text1', FieldType: 'Text', Type: 'input' },
      { FieldName: 'Text1 ', FieldType: 'Text', Type: 'input' },
      { FieldName: 'ListDataID ', FieldType: 'Text', Type: 'input' },
    ])!;
    expect(fields.map((f) => f.FieldName)).toEqual(['Text1', 'Text1 ', 'ListDataID ']);
    const m = await ensureMirrorTable(t.db, opts('exact', fields));
    expect(m.columns.map((c) => [c.field, c.column])).toEqual([
      ['Text1', 'text1'],
      ['Text1 ', 'text1_2'],
      ['ListDataID ', 'list_data_id'],
    ]);
    await upsertItems(t.db, m, [item('1', { Text1: 'a', 'Text1 ': 'b', 'ListDataID ': 'c' })], 'UTC');
    expect((await t.db.raw('select id, text1, text1_2, list_data_id from mirror.exact')).rows).toEqual([
      { id: '1', text1: 'a', text1_2: 'b', list_data_id: 'c' },
    ]);
  });
});
