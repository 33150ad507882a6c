/**
 * The schema plan without a database (src/mirror/schema-plan.ts): every case the
 * schema tests cover against PostgreSQL (test/schema/*, test/mirror/ddl.test.ts,
 * test/mirror/columns-for-people.test.ts, test/reporting/widen.test.ts), as a
 * table. Each row starts from the table an earlier plan made (its registry and
 * its columns as the catalog would describe them) and plans the next field list.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import type { ColumnKind } from '../../src/mirror/column-types.js';
import { describeSchemaChange, type SchemaChange } from '../../src/schema-change.js';
import { planSchema, type SchemaPlan, type SchemaPlanInput, type TableDescription } from '../../src/mirror/schema-plan.js';
import type { FieldMeta } from '../../src/platform/types.js';

const FORMATTED: Record<ColumnKind, string> = {
  text: 'text',
  numeric: 'numeric',
  boolean: 'boolean',
  date: 'date',
  timestamptz: 'timestamp with time zone',
  'text[]': 'text[]',
  jsonb: 'jsonb',
};

const SYSTEM: FieldMeta[] = [
  { FieldName: 'ListDataID', FieldType: 'Text', Type: 'id', IsSystem: true },
  { FieldName: 'RowVersion', FieldType: 'Bigint', Type: 'version', IsSystem: true },
  { FieldName: 'Created', FieldType: 'Datetime', Type: 'datepicker', IsSystem: true },
  { FieldName: 'Modified', FieldType: 'Datetime', Type: 'datepicker', IsSystem: true },
];
const AMOUNT: FieldMeta = { FieldName: 'Amount', FieldID: 'f-amount', FieldType: 'Bigint', Type: 'input_number' };
const WHEN: FieldMeta = {
  FieldName: 'When',
  FieldID: 'f-when',
  FieldType: 'Datetime',
  Type: 'datepicker',
  Rules: { DateFormat: 'yyyy-MM-dd' },
};
const NOTES: FieldMeta = { FieldName: 'Notes', FieldID: 'f-notes', DisplayName: 'Notes', FieldType: 'Text', Type: 'textarea' };
const FRESH: FieldMeta = { FieldName: 'Fresh', FieldType: 'Bit', Type: 'switch' };
const BASE: FieldMeta[] = [...SYSTEM, AMOUNT, WHEN, NOTES];

function input(fields: readonly FieldMeta[], more: Partial<SchemaPlanInput> = {}): SchemaPlanInput {
  return {
    schema: 'mirror',
    table: 'orders',
    listName: 'orders',
    existing: { kind: 'none' },
    fields,
    idField: 'ListDataID',
    versionField: 'RowVersion',
    createdField: 'Created',
    modifiedField: 'Modified',
    ...more,
  };
}

/** The table and registry a plan leaves behind, as the next plan reads them. */
function after(plan: SchemaPlan, more: Partial<SchemaPlanInput> = {}): Partial<SchemaPlanInput> {
  const columns = new Map<string, string>([
    ['id', 'text'],
    ['row_version', 'bigint'],
    ['created_at', 'timestamp with time zone'],
    ['modified_at', 'timestamp with time zone'],
    ['_raw', 'jsonb'],
    ['_synced_at', 'timestamp with time zone'],
    ['_deleted_at', 'timestamp with time zone'],
  ]);
  for (const e of [...plan.entries, ...plan.removed]) columns.set(e.column, FORMATTED[e.kind]);
  return {
    existing: { kind: 'table', columns },
    owner: 'orders',
    registry: {
      table: 'orders',
      fields: [...plan.fixedEntries, ...plan.entries, ...plan.removed],
      conversion: plan.timeZone === undefined ? {} : { timeZone: plan.timeZone },
    },
    ...more,
  };
}

/** Plans `first`, then `next` over the table it made. */
function evolve(
  first: readonly FieldMeta[],
  next: readonly FieldMeta[],
  more: Partial<SchemaPlanInput> = {},
  firstMore: Partial<SchemaPlanInput> = {},
) {
  const before = planSchema(input(first, firstMore));
  return planSchema(input(next, { ...after(before), ...more }));
}

/** A copy of the columns of the table `after` describes. */
function columnsOf(prior: Partial<SchemaPlanInput>): Map<string, string> {
  const existing = prior.existing;
  if (existing?.kind !== 'table') throw new Error('no table');
  return new Map(existing.columns);
}

const kinds = (p: SchemaPlan): string[] => p.changes.map((c) => c.kind);
const columnOf = (p: SchemaPlan, field: string): string | undefined => p.entries.find((e) => e.field === field)?.column;

interface Case {
  name: string;
  plan: () => SchemaPlan;
  changes: Partial<SchemaChange>[];
  check?: (p: SchemaPlan) => void;
}

const CASES: Case[] = [
  {
    name: 'a missing table is created with a column per field, fixed fields on the fixed columns',
    plan: () => planSchema(input(BASE)),
    changes: [{ kind: 'table-created', column: 'mirror.orders', detail: '3' }],
    check: (p) => {
      expect(p.create).toBe(true);
      expect(p.entries.map((e) => [e.column, e.kind])).toEqual([
        ['amount', 'numeric'],
        ['when', 'date'],
        ['notes', 'text'],
      ]);
      expect(p.fixedEntries.map((e) => [e.field, e.column])).toEqual([
        ['ListDataID', 'id'],
        ['RowVersion', 'row_version'],
        ['Created', 'created_at'],
        ['Modified', 'modified_at'],
      ]);
      expect(p.addColumns).toEqual([]);
    },
  },
  {
    name: 'nothing changed, whatever the field order: no change, no step',
    plan: () => evolve(BASE, [...BASE].reverse()),
    changes: [],
    check: (p) => {
      expect(p.create).toBe(false);
      expect(p.columnSteps).toEqual([]);
      expect(p.addColumns).toEqual([]);
      expect(p.widen).toEqual([]);
    },
  },
  {
    name: 'a new field gets a column of its own',
    plan: () => evolve(BASE, [...BASE, FRESH]),
    changes: [{ kind: 'added', field: 'Fresh', column: 'fresh', after: 'boolean' }],
    check: (p) => expect(p.addColumns).toEqual([{ column: 'fresh', kind: 'boolean' }]),
  },
  {
    name: "a known field whose column is missing gets it back (before: 'missing')",
    plan: () => {
      const first = planSchema(input(BASE));
      const prior = after(first);
      const columns = columnsOf(prior);
      columns.delete('notes');
      return planSchema(input(BASE, { ...prior, existing: { kind: 'table', columns } }));
    },
    changes: [{ kind: 'added', field: 'Notes', column: 'notes', before: 'missing' }],
  },
  {
    name: 'a removed field keeps its column, once reported; the entry is kept as removed',
    plan: () => {
      const gone = BASE.filter((f) => f !== NOTES);
      const once = evolve(BASE, gone);
      expect(kinds(planSchema(input(gone, after(once))))).toEqual([]);
      return once;
    },
    changes: [{ kind: 'removed', field: 'Notes', column: 'notes' }],
    check: (p) => expect(p.removed.map((e) => [e.field, e.column, e.removed])).toEqual([['Notes', 'notes', true]]),
  },
  {
    name: 'a removed field that comes back is written again in its column',
    plan: () =>
      planSchema(
        input(
          BASE,
          after(
            evolve(
              BASE,
              BASE.filter((f) => f !== NOTES),
            ),
          ),
        ),
      ),
    changes: [{ kind: 'back', field: 'Notes', column: 'notes' }],
    check: (p) => expect(p.removed).toEqual([]),
  },
  {
    name: 'a type the column cannot hold widens it to text, and the column is re-derived from _raw',
    plan: () =>
      evolve(BASE, [
        ...SYSTEM,
        { ...AMOUNT, FieldType: 'Text', Type: 'input' },
        { ...WHEN, Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } },
        NOTES,
      ]),
    changes: [
      { kind: 'widened', field: 'Amount', column: 'amount', before: 'numeric', after: 'text' },
      { kind: 'widened', field: 'When', column: 'when', before: 'date', after: 'timestamptz' },
    ],
    check: (p) => {
      expect(p.widen).toEqual(['amount', 'when']);
      expect(p.entries.find((e) => e.field === 'When')).toMatchObject({ kind: 'text', platformKind: 'timestamptz' });
      expect(p.stale.columns.map((c) => c.column)).toEqual(['amount', 'when']);
      expect(p.stale.why).toBe('widened to text: amount, when');
    },
  },
  {
    name: 'a text column stays text when the platform goes back to a narrower type, said once',
    plan: () => {
      const widened = evolve(BASE, [...SYSTEM, { ...AMOUNT, FieldType: 'Text', Type: 'input' }, WHEN, NOTES]);
      const back = planSchema(input(BASE, after(widened)));
      expect(kinds(planSchema(input(BASE, after(back))))).toEqual([]);
      return back;
    },
    changes: [{ kind: 'kept-text', field: 'Amount', column: 'amount', before: 'text', after: 'numeric' }],
    check: (p) => {
      expect(p.entries.find((e) => e.field === 'Amount')).toMatchObject({ kind: 'text', platformKind: 'numeric' });
      expect(p.widen).toEqual([]);
    },
  },
  {
    name: 'a display name renamed on the platform: the column keeps its name',
    plan: () => evolve(BASE, [...SYSTEM, AMOUNT, WHEN, { ...NOTES, DisplayName: 'Remarks' }]),
    changes: [{ kind: 'renamed', field: 'Notes', column: 'notes', before: 'Notes', after: 'Remarks' }],
    check: (p) => expect(p.columnSteps).toEqual([]),
  },
  {
    name: 'a new field whose display name collides is suffixed; existing names stay',
    plan: () => evolve(BASE, [...BASE, { FieldName: 'Notes2', DisplayName: 'Notes', FieldType: 'Text', Type: 'input' }]),
    changes: [{ kind: 'added', field: 'Notes2', column: 'notes_2' }],
    check: (p) => expect(columnOf(p, 'Notes')).toBe('notes'),
  },
  {
    name: 'a field that sorts first appears later: the stored mapping keeps its column',
    plan: () => {
      const f1: FieldMeta[] = [...SYSTEM, { FieldName: 'order_date', FieldType: 'Text', Type: 'input' }];
      return evolve(f1, [...SYSTEM, { FieldName: 'OrderDate', FieldType: 'Text', Type: 'input' }, ...f1.slice(4)]);
    },
    changes: [{ kind: 'added', field: 'OrderDate', column: 'order_date_2' }],
    check: (p) => expect(columnOf(p, 'order_date')).toBe('order_date'),
  },
  {
    name: 'lists[].columns pins another name: the existing column is renamed, then in the history and views',
    plan: () => evolve(BASE, BASE, { columns: { Notes: 'remarks' } }),
    changes: [{ kind: 'column-renamed', field: 'Notes', column: 'remarks', before: 'notes', after: 'remarks' }],
    check: (p) => {
      expect(p.columnSteps).toEqual([{ op: 'rename', from: 'notes', to: 'remarks', shown: false }]);
      expect(p.shownRenames).toEqual([{ from: 'notes', to: 'remarks' }]);
      expect(columnOf(p, 'Notes')).toBe('remarks');
    },
  },
  {
    name: 'a pinned type: the column takes it, and says where it came from',
    plan: () =>
      planSchema(input([...SYSTEM, { FieldName: 'Tags', FieldType: 'Text', Type: 'input' }], { columnTypes: { Tags: 'text[]' } })),
    changes: [{ kind: 'table-created', detail: '1' }],
    check: (p) =>
      expect(p.entries[0]).toMatchObject({ column: 'tags', kind: 'text[]', platformKind: 'text[]', kindSource: 'lists[].columns' }),
  },
  {
    name: "a field column named like listsync's own (made before the name was reserved) is renamed to a free name",
    plan: () => {
      const first = planSchema(input(BASE));
      const prior = after(first);
      const fields = prior.registry!.fields.map((e) => (e.field === 'Notes' ? { ...e, column: 'synced_at' } : e));
      const columns = columnsOf(prior);
      columns.delete('notes');
      columns.set('synced_at', 'text');
      const registry = { ...prior.registry!, fields };
      const p = planSchema(input(BASE, { ...prior, existing: { kind: 'table', columns }, registry }));
      expect(fields.find((e) => e.field === 'Notes')?.column).toBe('synced_at'); // the input is not mutated
      return p;
    },
    changes: [
      { kind: 'column-renamed', field: 'Notes', column: 'synced_at_2', before: 'synced_at', after: 'synced_at_2', detail: 'reserved' },
    ],
    check: (p) => {
      expect(p.columnSteps).toEqual([{ op: 'rename', from: 'synced_at', to: 'synced_at_2', shown: true }]);
      expect(columnOf(p, 'Notes')).toBe('synced_at_2');
    },
  },
  {
    name: 'a slot given to another field (another FieldID): the old column is kept as <column>_removed, its raw values moved',
    plan: () => evolve(BASE, [...SYSTEM, AMOUNT, WHEN, { ...NOTES, FieldID: 'f-other', DisplayName: 'Notes' }]),
    changes: [
      { kind: 'slot-reused', field: 'Notes', column: 'notes_removed', detail: 'Notes@notes_removed' },
      { kind: 'added', field: 'Notes', column: 'notes' },
    ],
    check: (p) => {
      expect(p.columnSteps).toEqual([
        { op: 'rename', from: 'notes', to: 'notes_removed', shown: true },
        { op: 'move-raw', field: 'Notes', rawKey: 'Notes@notes_removed' },
      ]);
      expect(p.removed).toEqual([
        expect.objectContaining({ field: 'Notes', column: 'notes_removed', retired: true, rawKey: 'Notes@notes_removed' }),
      ]);
      expect(p.changes[0]!.before).toBe('"Notes" FieldID f-notes Text/textarea');
    },
  },
  {
    name: 'without FieldIDs, another control in the slot is another field',
    plan: () => {
      const plain: FieldMeta = { FieldName: 'Pick', FieldType: 'Text', Type: 'input' };
      return evolve([...SYSTEM, plain], [...SYSTEM, { ...plain, Type: 'checkbox' }]);
    },
    changes: [
      { kind: 'slot-reused', field: 'Pick', column: 'pick_removed' },
      { kind: 'added', field: 'Pick', column: 'pick' },
    ],
  },
  {
    name: 'a reused slot whose column has 63 bytes keeps it under a name that fits',
    plan: () => {
      const long: FieldMeta = { FieldName: 'x'.repeat(70), FieldID: '1', FieldType: 'Text', Type: 'input' };
      return evolve([...SYSTEM, long], [...SYSTEM, { ...long, FieldID: '2' }]);
    },
    changes: [
      { kind: 'slot-reused', column: `${'x'.repeat(55)}_removed` },
      { kind: 'added', column: 'x'.repeat(63) },
    ],
  },
  {
    name: 'names that differ only by surrounding spaces are two fields; a repeated name is one',
    plan: () =>
      planSchema(
        input([
          ...SYSTEM,
          { FieldName: 'Code', FieldType: 'Text', Type: 'input' },
          { FieldName: ' Code', FieldType: 'Text', Type: 'input' },
          { FieldName: 'Code', FieldType: 'Bit', Type: 'switch' },
        ]),
      ),
    changes: [{ kind: 'table-created', detail: '2' }],
    check: (p) =>
      expect(p.entries.map((e) => [e.field, e.column, e.kind])).toEqual([
        // New fields are named in field-name order: ' Code' sorts first.
        ['Code', 'code_2', 'text'],
        [' Code', 'code', 'text'],
      ]),
  },
  {
    name: 'a mirror named from field names, upgraded to display names: nothing is renamed, a new field is named from its display name',
    plan: () => {
      const named: FieldMeta[] = [...SYSTEM, { FieldName: 'Text1', DisplayName: 'Customer Name', FieldType: 'Text', Type: 'input' }];
      return evolve(
        named,
        [...named, { FieldName: 'Text2', DisplayName: 'Customer', FieldType: 'Text', Type: 'input' }],
        {},
        { columnNames: 'field' },
      );
    },
    changes: [{ kind: 'added', field: 'Text2', column: 'customer' }],
    check: (p) => {
      expect(columnOf(p, 'Text1')).toBe('text1');
      expect(p.columnSteps).toEqual([]);
    },
  },
  {
    name: "a new field whose display name is one of listsync's own column names gets a suffixed column",
    plan: () => evolve(BASE, [...BASE, { FieldName: 'Text9', DisplayName: 'Synced At', FieldType: 'Text', Type: 'input' }]),
    changes: [{ kind: 'added', field: 'Text9', column: 'synced_at_2' }],
  },
  {
    name: 'a display name renamed to one with a lone surrogate: the change keeps both names exactly',
    plan: () => evolve(BASE, [...SYSTEM, AMOUNT, WHEN, { ...NOTES, DisplayName: 'Notes \ud83d' }]),
    changes: [{ kind: 'renamed', field: 'Notes', column: 'notes', before: 'Notes', after: 'Notes \ud83d' }],
  },
  {
    name: 'the list now mirrors into another table: said first',
    plan: () => planSchema(input(BASE, { registry: { table: 'old_orders', fields: [], conversion: {} } })),
    changes: [{ kind: 'retargeted', before: 'mirror.old_orders', after: 'mirror.orders' }, { kind: 'table-created' }],
  },
  {
    name: 'a fixed column missing from an existing table is added',
    plan: () => {
      const prior = after(planSchema(input(BASE)));
      const columns = columnsOf(prior);
      columns.delete('_deleted_at');
      return planSchema(input(BASE, { ...prior, existing: { kind: 'table', columns } }));
    },
    changes: [{ kind: 'fixed-column-added', column: '_deleted_at', after: 'timestamptz' }],
    check: (p) => expect(p.fixedColumnsToAdd).toEqual([['_deleted_at', 'timestamptz']]),
  },
  {
    name: 'the platform time zone changed: date and date-time columns, created_at and modified_at are re-derived',
    plan: () => evolve(BASE, BASE, { timeZone: 'Asia/Tokyo' }, { timeZone: 'Europe/Paris' }),
    changes: [],
    check: (p) => {
      expect(p.stale.columns.map((c) => c.column)).toEqual(['created_at', 'modified_at', 'when']);
      expect(p.stale.why).toBe('platform.timeZone changed from Europe/Paris to Asia/Tokyo');
      expect(p.timeZone).toBe('Asia/Tokyo');
    },
  },
  {
    name: 'no time zone given: the one the table was converted under is kept, nothing re-derived',
    plan: () => evolve(BASE, BASE, {}, { timeZone: 'Europe/Paris' }),
    changes: [],
    check: (p) => {
      expect(p.timeZone).toBe('Europe/Paris');
      expect(p.stale.columns).toEqual([]);
    },
  },
];

describe('planSchema', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const plan = c.plan();
    expect(plan.changes).toHaveLength(c.changes.length);
    c.changes.forEach((want, i) => expect(plan.changes[i]).toMatchObject(want));
    c.check?.(plan);
  });
});

describe('planSchema refuses what the user must change in the config', () => {
  const table = (columns: [string, string][]): TableDescription => ({ kind: 'table', columns: new Map(columns) });
  const refusals: [string, Partial<SchemaPlanInput>, RegExp, string][] = [
    ['a view under the name', { existing: { kind: 'other' } }, /mirror\.orders exists but is not a table/, 'lists[].table'],
    [
      'a table another list mirrors',
      { existing: table([['id', 'text']]), owner: 'invoices' },
      /already mirrors list "invoices"/,
      'lists[].table',
    ],
    ['a table without an id column', { existing: table([['name', 'text']]) }, /has no "id" column/, 'lists[].table'],
  ];
  it.each(refusals)('%s', (_name, more, message, key) => {
    const refused = (): SchemaPlan => planSchema(input(BASE, more));
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(message);
    try {
      refused();
    } catch (e) {
      expect((e as ConfigError).key).toBe(key);
    }
  });

  it('a pinned name an existing column already holds', () => {
    const prior = after(planSchema(input(BASE)));
    const refused = (): SchemaPlan =>
      planSchema(
        input(BASE, {
          ...prior,
          columns: { Notes: 'amount_text' },
          existing: table([
            ['id', 'text'],
            ['notes', 'text'],
            ['amount_text', 'text'],
          ]),
        }),
      );
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/pins field Notes to column "amount_text", but mirror\.orders already has a column "amount_text"/);
  });
});

describe('the sentences come from the typed changes', () => {
  it('an added field reads as it always has', () => {
    const change = evolve(BASE, [...BASE, FRESH]).changes[0]!;
    expect(describeSchemaChange(change)).toBe('added column fresh (boolean) for new field Fresh');
  });
});
