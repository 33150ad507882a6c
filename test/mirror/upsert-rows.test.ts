import { describe, expect, it } from 'vitest';
import { createTableMapping } from '../../src/mirror/table-mapping.js';
import {
  batchRows,
  classifyStored,
  countWrites,
  emptyUpsertResult,
  type BatchRow,
  type StoredState,
  type UpsertFailure,
} from '../../src/mirror/upsert-rows.js';
import { bindingsOf, copyField, copyLines, encodeRow } from '../../src/mirror/row-encoding.js';
import { RawJsonWriter } from '../../src/mirror/raw-json.js';

const mapping = createTableMapping({
  schema: 'mirror',
  table: 'orders',
  listName: 'orders',
  idField: 'ListDataID',
  versionField: 'RowVersion',
  createdField: 'Created',
  modifiedField: 'Modified',
  columns: [
    { field: 'Text1', column: 'title', kind: 'text' },
    { field: 'Bigint1', column: 'amount', kind: 'numeric' },
  ],
  removedColumns: [],
  changes: [],
  fingerprint: 'f',
});

describe('batchRows: one row per ID, the highest version wins', () => {
  it.each([
    {
      name: 'distinct IDs stay apart',
      items: [
        { ListDataID: 1, RowVersion: 1 },
        { ListDataID: 2, RowVersion: 1 },
      ],
      want: [
        ['1', 1],
        ['2', 1],
      ],
    },
    {
      name: 'a higher version replaces a lower one',
      items: [
        { ListDataID: 1, RowVersion: 3 },
        { ListDataID: 1, RowVersion: 5 },
      ],
      want: [['1', 5]],
    },
    {
      name: 'a lower version after a higher one is dropped',
      items: [
        { ListDataID: 1, RowVersion: 5 },
        { ListDataID: 1, RowVersion: 3 },
      ],
      want: [['1', 5]],
    },
    {
      name: 'on a tie the later item wins',
      items: [
        { ListDataID: 1, RowVersion: 2, Text1: 'a' },
        { ListDataID: 1, RowVersion: 2, Text1: 'b' },
      ],
      want: [['1', 2]],
      text: 'b',
    },
    {
      name: 'a versioned item replaces one without a version',
      items: [{ ListDataID: 1 }, { ListDataID: 1, RowVersion: 2 }],
      want: [['1', 2]],
    },
    {
      name: 'an item without a version does not replace a versioned one',
      items: [{ ListDataID: 1, RowVersion: 2 }, { ListDataID: 1 }],
      want: [['1', 2]],
    },
    {
      name: '19-digit IDs keep every digit',
      items: [{ ListDataID: '1177823559771361293', RowVersion: 1 }],
      want: [['1177823559771361293', 1]],
    },
  ])('$name', ({ items, want, text }) => {
    const result = emptyUpsertResult();
    const rows = batchRows(mapping, items, result, (f) => result.failures.push(f));
    expect([...rows.values()].map((r) => [r.id, r.version])).toEqual(want);
    if (text) expect(rows.get('1')!.item.Text1).toBe(text);
    expect(result.invalid).toBe(0);
  });

  it.each([
    { name: 'no ID', item: { RowVersion: 1 }, invalid: 1, failed: { id: '', field: 'ListDataID' } },
    { name: 'an ID that is not one', item: { ListDataID: { x: 1 }, RowVersion: 1 }, invalid: 1, failed: { id: '', field: 'ListDataID' } },
    {
      name: 'a version that is not a number',
      item: { ListDataID: 7, RowVersion: 'x' },
      invalid: 0,
      failed: { id: '7', field: 'RowVersion' },
    },
  ])('$name is counted and listed', ({ item, invalid, failed }) => {
    const result = emptyUpsertResult();
    const failures: UpsertFailure[] = [];
    const rows = batchRows(mapping, [item], result, (f) => failures.push(f));
    expect(result.invalid).toBe(invalid);
    expect(rows.size).toBe(1 - invalid);
    expect(failures).toMatchObject([failed]);
  });
});

const row = (id: string, version: number | null): BatchRow => ({
  id,
  version,
  versionText: version === null ? null : String(version),
  item: { ListDataID: id },
});
const stored = (id: string, s: Partial<StoredState>): StoredState => ({
  id,
  present: true,
  row_version: 1,
  deleted: false,
  pending: false,
  base_version: null,
  ...s,
});

describe('classifyStored: each row by what is stored for it', () => {
  it.each([
    { name: 'not stored: fresh', r: row('1', 1), st: stored('1', { present: false, row_version: null, deleted: null }), fate: 'fresh' },
    { name: 'a newer version: changed', r: row('1', 3), st: stored('1', { row_version: 2 }), fate: 'changed' },
    { name: 'the same version: unchanged', r: row('1', 2), st: stored('1', { row_version: 2 }), fate: 'unchanged' },
    { name: 'an older version never goes backwards', r: row('1', 1), st: stored('1', { row_version: 2 }), fate: 'unchanged' },
    {
      name: 'soft-deleted at the same version: comes back',
      r: row('1', 2),
      st: stored('1', { row_version: 2, deleted: true }),
      fate: 'changed',
      undeleting: 1,
    },
    { name: 'no version received: a candidate', r: row('1', null), st: stored('1', { row_version: 2 }), fate: 'changed' },
    { name: 'stored without a version: a candidate', r: row('1', 2), st: stored('1', { row_version: null }), fate: 'changed' },
    {
      name: 'an open local change holds it',
      r: row('1', 9),
      st: stored('1', { row_version: 2, pending: true, base_version: 2 }),
      fate: 'pending',
    },
  ])('$name', ({ r, st, fate, undeleting }) => {
    const c = classifyStored(new Map([[r.id, r]]), [st]);
    const fates = { fresh: c.fresh.length, changed: c.changed.length, pending: c.pending.length, unchanged: c.unchanged };
    expect(fates).toEqual({ fresh: 0, changed: 0, pending: 0, unchanged: 0, [fate]: 1 });
    expect(c.undeleting).toBe(undeleting ?? 0);
    if (fate === 'pending') expect(c.pending[0]).toMatchObject({ id: '1', remoteVersion: 9, baseVersion: 2 });
  });
});

describe('countWrites: what the statements passed over is unchanged', () => {
  const c = classifyStored(
    new Map([
      ['1', row('1', 1)],
      ['2', row('2', 5)],
      ['3', row('3', 5)],
      ['4', row('4', 1)],
    ]),
    [
      stored('1', { present: false }),
      stored('2', { row_version: 4, deleted: true }),
      stored('3', { row_version: 4 }),
      stored('4', { row_version: 1 }),
    ],
  );
  it.each([
    { name: 'every candidate written', inserted: 1, updated: 2, want: { inserted: 1, updated: 2, unchanged: 1, undeleted: 1 } },
    {
      name: 'another writer inserted the new row first',
      inserted: 0,
      updated: 2,
      want: { inserted: 0, updated: 2, unchanged: 2, undeleted: 1 },
    },
    { name: 'no update took: nothing undeleted', inserted: 1, updated: 0, want: { inserted: 1, updated: 0, unchanged: 3, undeleted: 0 } },
  ])('$name', ({ inserted, updated, want }) => {
    const result = emptyUpsertResult();
    countWrites(result, c, inserted, updated);
    expect(result).toMatchObject(want);
  });
});

describe('row encoding', () => {
  const encode = (item: Record<string, unknown>) => {
    const failures: UpsertFailure[] = [];
    const counts = { missing: 0, unstorable: 0 };
    const missing: number[] = [];
    const writer = new RawJsonWriter();
    const r: BatchRow = { id: String(item.ListDataID), version: 1, versionText: '1', item };
    const values = encodeRow(
      mapping,
      r,
      'UTC',
      writer,
      { fail: (f) => failures.push(f), missingKeys: () => void counts.missing++, unstorable: () => void counts.unstorable++ },
      missing,
    );
    return { values, failures, counts, missing, backslash: writer.lastHadBackslash };
  };

  it.each([
    {
      name: 'typed values in column order, `_raw` last with jsonb key order',
      item: { ListDataID: 1, RowVersion: 1, Created: '2026-01-02 03:04:05', Text1: 'a', Bigint1: '12' },
      values: [
        '1',
        '1',
        '2026-01-02 03:04:05+00:00',
        null,
        'a',
        '12',
        '{"Text1":"a","Bigint1":"12","Created":"2026-01-02 03:04:05","ListDataID":1,"RowVersion":1}',
      ],
      failed: [],
      missing: [],
    },
    {
      name: 'a value that does not convert is NULL and listed',
      item: { ListDataID: 2, RowVersion: 1, Text1: 'b', Bigint1: 'lots' },
      values: ['2', '1', null, null, 'b', null, '{"Text1":"b","Bigint1":"lots","ListDataID":2,"RowVersion":1}'],
      failed: [{ id: '2', field: 'Bigint1', raw: 'lots' }],
      missing: [],
    },
    {
      name: 'a key the item omits is noted by column index',
      item: { ListDataID: 3, RowVersion: 1, Bigint1: '1' },
      values: ['3', '1', null, null, null, '1', '{"Bigint1":"1","ListDataID":3,"RowVersion":1}'],
      failed: [],
      missing: [0],
    },
  ])('$name', ({ item, values, failed, missing }) => {
    const out = encode(item);
    expect(out.values).toEqual(values);
    expect(out.failures).toEqual(failed);
    expect(out.missing).toEqual(missing);
    expect(out.counts.missing).toBe(missing.length > 0 ? 1 : 0);
  });

  it('text PostgreSQL cannot hold: the column the closest text, `_raw` exact and escaped, counted', () => {
    const out = encode({ ListDataID: 4, RowVersion: 1, Text1: 'a\u0000b', Bigint1: '1' });
    expect(out.values[4]).toBe('a\ufffdb');
    expect(out.values.at(-1)).not.toContain('\\u0000');
    expect(out.counts.unstorable).toBe(1);
  });

  it.each([
    ['plain', 'plain'],
    ['tab\there', 'tab\\there'],
    ['line\nbreak\r', 'line\\nbreak\\r'],
    ['back\\slash', 'back\\\\slash'],
    [null, '\\N'],
  ])('COPY field %j is %j', (v, want) => {
    expect(copyField(v)).toBe(want);
  });

  it('COPY lines escape only the columns that may need it, and only in rows whose `_raw` has a backslash', () => {
    const encoded = {
      values: [
        ['1', '1', null, null, 'a\tb', '5', '{"Text1":"a\\tb"}'],
        ['2', '1', null, null, 'plain', null, '{"Text1":"plain"}'],
      ],
      rawBackslashes: [true, false],
    };
    const escapes = [true, false, false, false, true, false, true];
    expect(copyLines(escapes, encoded, [0, 2], 'NOW')).toBe(
      '1\t1\t\\N\t\\N\ta\\tb\t5\t{"Text1":"a\\\\tb"}\tNOW\n' + '2\t1\t\\N\t\\N\tplain\t\\N\t{"Text1":"plain"}\tNOW\n',
    );
  });

  it('bindings: one array literal per column, the `_raw` documents joined by U+001E', () => {
    const b = bindingsOf(mapping, [
      ['1', '1', null, null, 'a"b', '5', '{"a":1}'],
      ['2', null, null, null, null, null, '{"b":2}'],
    ]);
    expect(b).toEqual(['{"1","2"}', '{"1",NULL}', '{NULL,NULL}', '{NULL,NULL}', '{"a":1}\u001e{"b":2}', '{"a\\"b",NULL}', '{"5",NULL}']);
  });
});
