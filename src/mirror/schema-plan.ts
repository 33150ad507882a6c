/**
 * How a list's mirror table evolves, decided without touching the database:
 * from what the catalog says of the table, the registry entry and the
 * platform's field list, the column renames (pins, reserved names, reused
 * slots), the columns to add or widen, the fields kept as removed, and the
 * `SchemaChange`s that describe them. `ensureMirrorTable` (ddl.ts) runs it.
 *
 * Invariants (test/mirror/schema-plan.test.ts):
 * - Pure: the inputs are never mutated (the registry's entries are copied).
 * - Nothing is dropped: a removed field keeps its column; a type the column
 *   cannot hold widens it to text; a reused slot keeps the old field's column
 *   under `<column>_removed` and moves its raw values to `<field>@<column>`.
 * - The config conditions (not a table, another list's table, no `id`, a
 *   pinned name already taken) throw a `ConfigError` naming the key.
 * - `changes` lists the steps in the order they are applied; `rederived`
 *   is the one change left to the step that runs the plan (it counts rows).
 */
import { ConfigError } from '../errors.js';
import type { FieldMeta } from '../platform/types.js';
import { columnKindFor, describeField, SQL_TYPE, type ColumnKind } from './column-types.js';
import { assignColumnNames, freeColumnName, isReservedColumn, preferredColumnName, withSuffix, type ColumnNaming } from './naming.js';
import type { DerivedColumn } from './rederive.js';
import { fieldIdOf, fieldsFingerprint, isAnotherField } from './field-identity.js';
import type { RegistryEntry, RegistryField } from './list-registry.js';
import { isReadOnlyField } from './read-only.js';
import { flag } from '../platform/field-meta.js';
import type { SchemaChange } from '../schema-change.js';
import { FIXED_COLUMNS } from './table-mapping.js';

/** What the catalog says of the table's name: missing, another kind of relation, or a table and its columns' types (`format_type`). */
export type TableDescription = { kind: 'none' } | { kind: 'other' } | { kind: 'table'; columns: ReadonlyMap<string, string> };

export interface SchemaPlanInput {
  schema: string;
  table: string;
  listName: string;
  existing: TableDescription;
  /** The list the table's capture trigger names, when it has one. */
  owner?: string | undefined;
  registry?: Pick<RegistryEntry, 'table' | 'fields' | 'conversion'> | undefined;
  fields: readonly FieldMeta[];
  idField: string;
  versionField: string;
  createdField: string;
  modifiedField: string;
  timeZone?: string | undefined;
  columnNames?: ColumnNaming | undefined;
  columns?: Readonly<Record<string, string>> | undefined;
  columnTypes?: Readonly<Record<string, ColumnKind>> | undefined;
}

/** A step on the existing table before its columns are added: a rename (`shown`: in history and views at once), or a move of raw values. */
export type ColumnStep = { op: 'rename'; from: string; to: string; shown: boolean } | { op: 'move-raw'; field: string; rawKey: string };

export interface SchemaPlan {
  /** The table is created (with `entries` as its field columns). */
  create: boolean;
  columnSteps: ColumnStep[];
  /** Fixed columns (row_version, _raw...) missing from an existing table, with their types. */
  fixedColumnsToAdd: [string, string][];
  addColumns: { column: string; kind: ColumnKind }[];
  /** Existing columns altered to text. */
  widen: string[];
  /** Column renames to repeat in the history table and the views once the DDL ran. */
  shownRenames: { from: string; to: string }[];
  /** Registry entries: fixed fields, the field columns in the platform's order, removed and retired ones. */
  fixedEntries: RegistryField[];
  entries: RegistryField[];
  removed: RegistryField[];
  /** The field list without duplicates and nameless fields. */
  fields: FieldMeta[];
  fingerprint: string;
  /** Columns converted under settings the table no longer has (re-derived from `_raw`), and why. */
  stale: { columns: DerivedColumn[]; why: string };
  timeZone: string | undefined;
  changes: SchemaChange[];
}

/** How Postgres' `format_type` names each kind's type. */
const FORMATTED_TYPE: Readonly<Record<ColumnKind, string>> = {
  text: 'text',
  numeric: 'numeric',
  boolean: 'boolean',
  date: 'date',
  timestamptz: 'timestamp with time zone',
  'text[]': 'text[]',
  jsonb: 'jsonb',
};

/** The fixed columns after `id`, with their types (the id column is the primary key). */
export const FIXED_COLUMN_TYPES: readonly [string, string][] = [
  [FIXED_COLUMNS.rowVersion, 'bigint'],
  [FIXED_COLUMNS.createdAt, 'timestamptz'],
  [FIXED_COLUMNS.modifiedAt, 'timestamptz'],
];
export const TRAILING_COLUMN_TYPES: readonly [string, string][] = [
  [FIXED_COLUMNS.raw, 'jsonb'],
  [FIXED_COLUMNS.syncedAt, 'timestamptz'],
  [FIXED_COLUMNS.deletedAt, 'timestamptz'],
];

/** What the naming steps share while the plan is built. */
interface Naming {
  /** The table's columns and types as the planned renames leave them; undefined when the table does not exist yet. */
  columns: Map<string, string> | undefined;
  /** Column names in use or promised: registry entries, pinned names, new names given so far. */
  taken: Set<string>;
  steps: ColumnStep[];
  changes: SchemaChange[];
}

/** The table's evolution, as a plan (see the file header). */
export function planSchema(p: SchemaPlanInput): SchemaPlan {
  assertMirrorTable(p);
  const changes: SchemaChange[] = [];
  if (p.registry && p.registry.table !== p.table) {
    changes.push({ kind: 'retargeted', before: `${p.schema}.${p.registry.table}`, after: `${p.schema}.${p.table}` });
  }
  const fixedByField = fixedColumnsByField(p);
  const fields = distinctFields(p.fields);
  const ownFields = fields.filter((f) => !fixedByField.has(f.FieldName));
  const registered = (p.registry?.fields ?? []).filter((e) => !e.fixed).map((e) => ({ ...e }));
  const retired = registered.filter((e) => e.retired === true);
  const prior = new Map(registered.filter((e) => e.retired !== true).map((e) => [e.field, e]));
  const naming: Naming = {
    columns: p.existing.kind === 'table' ? new Map(p.existing.columns) : undefined,
    taken: new Set([...registered.map((e) => e.column), ...Object.values(p.columns ?? {})]),
    steps: [],
    changes,
  };
  renameReservedColumns(naming, registered);
  retireReusedSlots(naming, ownFields, prior, retired);
  const names = assignColumnNames(
    ownFields.map((f) => ({ field: f.FieldName, name: preferredColumnName(f, p.columnNames) })),
    new Map([...prior].map(([field, e]) => [field, e.column])),
    new Map(Object.entries(p.columns ?? {})),
  );
  renamePinnedColumns(naming, `${p.schema}.${p.table}`, prior, names);
  const own = planFieldColumns(p, naming, ownFields, prior, names);
  const removed = removedFields(own.entries, prior, retired, changes);
  const fixedColumnsToAdd = naming.columns === undefined ? [] : missingFixedColumns(naming.columns);
  if (naming.columns === undefined) {
    changes.push({ kind: 'table-created', column: `${p.schema}.${p.table}`, detail: String(own.entries.length) });
  }
  for (const [column, type] of fixedColumnsToAdd) changes.push({ kind: 'fixed-column-added', column, after: type });
  const fixedEntries = fixedRegistryEntries(fixedByField, fields);
  const timeZone = p.timeZone ?? p.registry?.conversion.timeZone;
  const stale =
    naming.columns === undefined
      ? { columns: [], why: '' }
      : staleColumns({ entries: own.entries, widen: own.widen, fixedEntries, before: p.registry?.conversion.timeZone, now: timeZone });
  return {
    create: naming.columns === undefined,
    columnSteps: naming.steps,
    fixedColumnsToAdd,
    addColumns: own.addColumns,
    widen: own.widen,
    shownRenames:
      naming.columns === undefined
        ? []
        : changes.filter((c) => c.kind === 'column-renamed').map((c) => ({ from: c.before!, to: c.after! })),
    fixedEntries,
    entries: own.entries,
    removed,
    fields,
    fingerprint: fieldsFingerprint(fields),
    stale,
    timeZone,
    changes,
  };
}

/** The conditions under which the name cannot be (or become) this list's mirror table: the user picks another name. */
function assertMirrorTable(p: SchemaPlanInput): void {
  const { schema, table, listName, existing } = p;
  if (existing.kind === 'other') {
    throw new ConfigError(
      `${schema}.${table} exists but is not a table (a view?); choose another table name for list "${listName}" (lists[].table).`,
      'lists[].table',
    );
  }
  if (existing.kind !== 'table') return;
  if (p.owner !== undefined && p.owner !== listName) {
    throw new ConfigError(
      `Table ${schema}.${table} already mirrors list "${p.owner}"; give list "${listName}" a table of its own (lists[].table).`,
      'lists[].table',
    );
  }
  if (!existing.columns.has(FIXED_COLUMNS.id)) {
    throw new ConfigError(
      `Table ${schema}.${table} exists but has no "id" column, so it is not a listsync mirror table; choose another table name for list "${listName}" (lists[].table) or drop it.`,
      'lists[].table',
    );
  }
}

/** Which fields go to the fixed columns. */
function fixedColumnsByField(p: SchemaPlanInput): Map<string, string> {
  return new Map<string, string>([
    [p.idField, FIXED_COLUMNS.id],
    [p.versionField, FIXED_COLUMNS.rowVersion],
    [p.createdField, FIXED_COLUMNS.createdAt],
    [p.modifiedField, FIXED_COLUMNS.modifiedAt],
  ]);
}

/** The field list without nameless fields and without a second field of the same name. */
function distinctFields(all: readonly FieldMeta[]): FieldMeta[] {
  const seen = new Set<string>();
  const fields: FieldMeta[] = [];
  for (const f of all) {
    if (typeof f?.FieldName !== 'string' || f.FieldName === '' || seen.has(f.FieldName)) continue;
    seen.add(f.FieldName);
    fields.push(f);
  }
  return fields;
}

/** Renames a field column in the plan; a step on the table (and its history and views) when the table has it. */
function renameFieldColumn(n: Naming, from: string, to: string): void {
  n.taken.add(to);
  if (n.columns === undefined || !n.columns.has(from)) return;
  n.steps.push({ op: 'rename', from, to, shown: true });
  n.columns.set(to, n.columns.get(from)!);
  n.columns.delete(from);
}

/** A column name that no field column, existing column or pinned name holds (and not reserved). */
function freeName(n: Naming, base: string): string {
  return freeColumnName(base, (c) => n.taken.has(c) || (n.columns?.has(c) ?? false));
}

/**
 * Field columns named like a column listsync adds itself (named before the name was reserved:
 * a field "Valid From" in a list that now keeps history, "Synced At" beside the view's `synced_at`)
 * are renamed to a free name, so that every table and view built from the mirror table can show both.
 */
function renameReservedColumns(n: Naming, entries: readonly RegistryField[]): void {
  for (const e of entries) {
    if (!isReservedColumn(e.column)) continue;
    const to = freeName(n, e.column);
    renameFieldColumn(n, e.column, to);
    n.changes.push({ kind: 'column-renamed', field: e.field, column: to, before: e.column, after: to, detail: 'reserved' });
    e.column = to;
  }
}

/**
 * Slots the platform gave to another field since the registry saw them: the old field (active or
 * removed) is retired: its column is renamed `<column>_removed` with its data, its raw values move to
 * `_raw` key `<field>@<column>` (which later rewrites of the row keep), and the slot's new field is
 * named and created like any new field. Taken out of `prior`, added to `retired`.
 */
function retireReusedSlots(n: Naming, fields: readonly FieldMeta[], prior: Map<string, RegistryField>, retired: RegistryField[]): void {
  for (const f of fields) {
    const before = prior.get(f.FieldName);
    if (before === undefined || !isAnotherField(before, f)) continue;
    const kept = freeName(n, withSuffix(before.column, '_removed'));
    renameFieldColumn(n, before.column, kept);
    const rawKey = `${f.FieldName}@${kept}`;
    if (n.columns !== undefined) n.steps.push({ op: 'move-raw', field: f.FieldName, rawKey });
    prior.delete(f.FieldName);
    retired.push({ ...before, column: kept, removed: true, retired: true, rawKey });
    n.changes.push({
      kind: 'slot-reused',
      field: f.FieldName,
      column: kept,
      before: fieldLabel(before.displayName, before.fieldId, before.storage, before.control),
      after: fieldLabel(f.DisplayName, fieldIdOf(f), describeField(f).storage, describeField(f).control),
      detail: rawKey,
    });
  }
}

function fieldLabel(display: string | undefined, id: string | undefined, storage: string | undefined, control: string | undefined): string {
  const kind = [storage, control].filter(Boolean).join('/');
  return `"${display ?? ''}"${id !== undefined ? ` FieldID ${id}` : ''}${kind ? ` ${kind}` : ''}`;
}

/**
 * Renames existing columns whose field is pinned to another name in the config
 * (`lists[].columns`). The pinned name must be free.
 */
function renamePinnedColumns(
  n: Naming,
  table: string,
  prior: ReadonlyMap<string, RegistryField>,
  names: ReadonlyMap<string, string>,
): void {
  const columns = n.columns;
  if (columns === undefined) return;
  for (const [field, e] of prior) {
    const to = names.get(field);
    if (to === undefined || to === e.column || !columns.has(e.column)) continue;
    if (columns.has(to))
      throw new ConfigError(
        `lists[].columns pins field ${field} to column "${to}", but ${table} already has a column "${to}"; choose a free name.`,
        'lists[].columns',
      );
    n.steps.push({ op: 'rename', from: e.column, to, shown: false });
    columns.set(to, columns.get(e.column)!);
    columns.delete(e.column);
    n.changes.push({ kind: 'column-renamed', field, column: to, before: e.column, after: to });
  }
}

/** Each field column's kind and the DDL it needs: kept, added, widened to text, or kept as text. */
function planFieldColumns(
  p: SchemaPlanInput,
  n: Naming,
  ownFields: readonly FieldMeta[],
  prior: ReadonlyMap<string, RegistryField>,
  names: ReadonlyMap<string, string>,
): { entries: RegistryField[]; addColumns: { column: string; kind: ColumnKind }[]; widen: string[] } {
  const entries: RegistryField[] = [];
  const addColumns: { column: string; kind: ColumnKind }[] = [];
  const widen: string[] = [];
  const changes = n.changes;
  for (const f of ownFields) {
    const column = names.get(f.FieldName)!;
    const pinnedKind = p.columnTypes?.[f.FieldName];
    const wanted = pinnedKind ?? columnKindFor(f);
    const before = prior.get(f.FieldName);
    const field = f.FieldName;
    const renamedTo = platformRename(before, f);
    if (renamedTo !== undefined) changes.push({ kind: 'renamed', field, column, before: before?.displayName ?? '', after: renamedTo });
    let kind: ColumnKind = wanted;
    const have = n.columns?.get(column);
    if (n.columns === undefined) {
      // A new table: every field column is in its create statement.
    } else if (have === undefined) {
      addColumns.push({ column, kind });
      changes.push({ kind: 'added', field, column, after: SQL_TYPE[kind], ...(before ? { before: 'missing' } : {}) });
    } else if (have === FORMATTED_TYPE[wanted]) {
      if (before?.removed) changes.push({ kind: 'back', field, column });
    } else if (have === 'text') {
      kind = 'text';
      if (before?.removed) changes.push({ kind: 'back', field, column });
      if (before === undefined || before.platformKind !== wanted)
        changes.push({ kind: 'kept-text', field, column, before: 'text', after: SQL_TYPE[wanted] });
    } else {
      kind = 'text';
      widen.push(column);
      changes.push({ kind: 'widened', field, column, before: have, after: SQL_TYPE[wanted] });
    }
    const entry = registryEntry(f, column, kind, wanted, false);
    entries.push(pinnedKind === undefined ? entry : { ...entry, kindSource: 'lists[].columns' });
  }
  return { entries, addColumns, widen };
}

/** Registered fields no longer on the platform (kept as removed), then the retired ones. */
function removedFields(
  entries: readonly RegistryField[],
  prior: ReadonlyMap<string, RegistryField>,
  retired: readonly RegistryField[],
  changes: SchemaChange[],
): RegistryField[] {
  const ownNames = new Set(entries.map((e) => e.field));
  const removed: RegistryField[] = [];
  for (const e of prior.values()) {
    if (ownNames.has(e.field)) continue;
    if (!e.removed) changes.push({ kind: 'removed', field: e.field, column: e.column });
    removed.push({ ...e, removed: true });
  }
  removed.push(...retired);
  return removed;
}

function missingFixedColumns(columns: ReadonlyMap<string, string>): [string, string][] {
  return [...FIXED_COLUMN_TYPES, ...TRAILING_COLUMN_TYPES].filter(([c]) => !columns.has(c)).map(([c, t]) => [c, t]);
}

/** Registry entries of the fixed fields, in the order of the fixed columns. */
function fixedRegistryEntries(fixedByField: ReadonlyMap<string, string>, fields: readonly FieldMeta[]): RegistryField[] {
  return [...fixedByField].map(([fieldName, column]) => {
    const meta = fields.find((f) => f.FieldName === fieldName) ?? { FieldName: fieldName, FieldType: '', Type: '' };
    const kind: ColumnKind = column === FIXED_COLUMNS.id ? 'text' : column === FIXED_COLUMNS.rowVersion ? 'numeric' : 'timestamptz';
    return registryEntry(meta, column, kind, kind, true);
  });
}

export function registryEntry(f: FieldMeta, column: string, kind: ColumnKind, platformKind: ColumnKind, fixed: boolean): RegistryField {
  const shape = describeField(f);
  return {
    field: f.FieldName,
    column,
    kind,
    platformKind,
    fieldType: typeof f.FieldType === 'string' ? f.FieldType : '',
    type: typeof f.Type === 'string' ? f.Type : '',
    storage: shape.storage,
    control: shape.control,
    kindSource: shape.source,
    ...(typeof f.DisplayName === 'string' && f.DisplayName !== '' ? { displayName: f.DisplayName } : {}),
    indexed: flag(f.IsIndex),
    system: flag(f.IsSystem),
    ...(isReadOnlyField(f) ? { readOnly: true } : {}),
    fixed,
    removed: false,
    ...(fieldIdOf(f) !== undefined ? { fieldId: fieldIdOf(f) } : {}),
  };
}

/** The new display name of a field renamed on the platform since the registry saw it; undefined otherwise. */
function platformRename(before: RegistryField | undefined, f: FieldMeta): string | undefined {
  const now = typeof f.DisplayName === 'string' ? f.DisplayName : undefined;
  if (before?.displayName === undefined || now === undefined || now === '' || now === before.displayName) return undefined;
  return now;
}

/**
 * Columns whose values were converted under settings the table no longer has:
 * widened columns (now text: the platform's text, not a cast of the old type),
 * and every date and date-time column when the platform's time zone changed.
 */
function staleColumns(s: {
  entries: readonly RegistryField[];
  widen: readonly string[];
  fixedEntries: readonly RegistryField[];
  before: string | undefined;
  now: string | undefined;
}): { columns: DerivedColumn[]; why: string } {
  const zoneChanged = s.before !== undefined && s.now !== undefined && s.before !== s.now;
  const widened = new Set(s.widen);
  const timed = (e: RegistryField): boolean => e.kind === 'date' || e.kind === 'timestamptz';
  const columns = [
    ...s.fixedEntries.filter((e) => zoneChanged && e.kind === 'timestamptz'),
    ...s.entries.filter((e) => widened.has(e.column) || (zoneChanged && timed(e))),
  ].map(({ field, column, kind }) => ({ field, column, kind }));
  const why = [
    zoneChanged && `platform.timeZone changed from ${s.before} to ${s.now}`,
    widened.size > 0 && `widened to text: ${s.widen.join(', ')}`,
  ]
    .filter(Boolean)
    .join('; ');
  return { columns, why };
}
