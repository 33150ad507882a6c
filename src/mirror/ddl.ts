/**
 * Mirror tables from field metadata: created when missing, evolved when the
 * platform's fields change, and registered in `listsync.lists`.
 *
 * Evolution never drops data: a new field adds a column; a removed field keeps
 * its column (no longer written); a type change the column cannot hold widens
 * the column to text (`alter column ... type text using col::text`). Every such
 * step is described in the returned mapping's `changes` and logged.
 *
 * Identifiers are always quoted (`quoteIdent`); values always travel as
 * bindings; the few string literals DDL needs (comments, trigger arguments) go
 * through `quoteLiteral`.
 */
import type { Knex } from '../db.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { FieldMeta } from '../platform/types.js';
import { flag } from '../platform/field-meta.js';
import { columnKindFor, describeField, SQL_TYPE, type ColumnKind } from './column-types.js';
import {
  assignColumnNames,
  assertIdentifier,
  freeColumnName,
  isReservedColumn,
  objectName,
  preferredColumnName,
  qualifiedName,
  quoteIdent,
  quoteLiteral,
  withSuffix,
  type ColumnNaming,
} from './naming.js';
import { DIRECTORY_OWN_COLUMNS, OWN_COLUMNS_OF } from './own-columns.js';
import { rederiveColumns, type DerivedColumn } from './rederive.js';
import {
  fieldIdOf,
  fieldsFingerprint,
  isAnotherField,
  keptRawKeys,
  mappedColumn,
  readRegistry,
  writeRegistry,
  type RegistryField,
} from './registry.js';
import { isReadOnlyField } from './read-only.js';
import { createTableMapping, FIXED_COLUMNS, type MappedColumn, type TableMapping } from './table-mapping.js';
import { ensureHistoryTable, historyTableName } from './history.js';
import {
  columnComments,
  createSchemaIfMissing,
  ensureView,
  historyViewSpec,
  liveViewSpec,
  renameColumnIfPresent,
  syncComments,
  tableComment,
  viewExists,
  type ViewSpec,
} from './reporting.js';
import { recordSchemaChanges } from '../store/schema-changes.js';
import { describeSchemaChange, WARNING_KINDS, type SchemaChange } from './schema-change.js';
import { assertCaptureFunction, attachCaptureTriggers, tableOwner } from './triggers.js';
import { escapeStorable } from './storable.js';
import { isTransaction, markListsyncWriter } from './writer.js';

export interface MirrorListRef {
  name: string;
  appID: string;
  listID: string;
  /** Table name in the mirror schema. */
  table: string;
}

export interface EnsureMirrorTableOptions {
  schema: string;
  list: MirrorListRef;
  fields: readonly FieldMeta[];
  idField: string;
  versionField: string;
  /** Default `Created`. */
  createdField?: string;
  /** Default `Modified`. */
  modifiedField?: string;
  /**
   * The platform's time zone the typed columns are converted in. When it differs
   * from the one the table was last converted under, the date and date-time
   * columns are re-derived from `_raw`.
   */
  timeZone?: string;
  /** Name new columns from display names (default) or field names. */
  columnNames?: ColumnNaming;
  /** Pinned column names by field name (`lists[].columns`); a pinned name renames an existing column. */
  columns?: Readonly<Record<string, string>>;
  /** Pinned column types by field name (`lists[].columns` with `type`), for metadata that does not say enough. */
  columnTypes?: Readonly<Record<string, ColumnKind>>;
  /** Schema of the live (and history) views; undefined or null: no views. */
  reportingSchema?: string | null;
  /** Keep `<table>_history` (lists[].history). */
  history?: boolean;
  /** The list's title on the platform, for the table's comment (kept as it is when undefined). */
  title?: string;
  /** The run these changes belong to. */
  runId?: number;
  /** `lists[].pushDeletes`: a DELETE on the table is written back (true) or refused (default). */
  pushDeletes?: boolean;
  /** `platform.omitsEmptyValues`: items leave empty values out, so a missing key is NULL (not "keep the column"). */
  omitsEmptyValues?: boolean;
  logger?: Logger;
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
const FIXED_COLUMN_TYPES: readonly [string, string][] = [
  [FIXED_COLUMNS.rowVersion, 'bigint'],
  [FIXED_COLUMNS.createdAt, 'timestamptz'],
  [FIXED_COLUMNS.modifiedAt, 'timestamptz'],
];
const TRAILING_COLUMN_TYPES: readonly [string, string][] = [
  [FIXED_COLUMNS.raw, 'jsonb'],
  [FIXED_COLUMNS.syncedAt, 'timestamptz'],
  [FIXED_COLUMNS.deletedAt, 'timestamptz'],
];

/** Serialises DDL on one table across processes (first key of the two-key advisory lock space). */
const DDL_LOCK_CLASS = 0x6c73_6464; // 'lsdd'

/**
 * Creates or evolves the mirror table of a list and registers it. Runs in one
 * transaction (the given one, or its own) under an advisory lock, so parallel
 * callers do not race; when nothing changed it takes no table locks.
 */
export async function ensureMirrorTable(db: Knex | Knex.Transaction, options: EnsureMirrorTableOptions): Promise<TableMapping> {
  assertIdentifier(options.schema);
  assertIdentifier(options.list.table);
  const run = (trx: Knex.Transaction): Promise<TableMapping> => ensureInTransaction(trx, options);
  return isTransaction(db) ? run(db) : db.transaction(run);
}

async function ensureInTransaction(trx: Knex.Transaction, o: EnsureMirrorTableOptions): Promise<TableMapping> {
  const { schema, list } = o;
  const table = list.table;
  const qtable = qualifiedName(schema, table);
  const createdField = o.createdField ?? 'Created';
  const modifiedField = o.modifiedField ?? 'Modified';
  const changes: SchemaChange[] = [];

  await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [DDL_LOCK_CLASS, `${schema}.${table}`]);
  await assertCaptureFunction(trx);

  const registry = await readRegistry(trx, list.name, { forUpdate: true });
  const existing = await describeTable(trx, schema, table);
  if (existing.kind === 'other') {
    throw new ConfigError(
      `${schema}.${table} exists but is not a table (a view?); choose another table name for list "${list.name}" (lists[].table).`,
      'lists[].table',
    );
  }
  if (existing.kind === 'table') {
    const owner = await tableOwner(trx, schema, table);
    if (owner !== undefined && owner !== list.name) {
      throw new ConfigError(
        `Table ${schema}.${table} already mirrors list "${owner}"; give list "${list.name}" a table of its own (lists[].table).`,
        'lists[].table',
      );
    }
    if (!existing.columns.has(FIXED_COLUMNS.id)) {
      throw new ConfigError(
        `Table ${schema}.${table} exists but has no "id" column, so it is not a listsync mirror table; choose another table name for list "${list.name}" (lists[].table) or drop it.`,
        'lists[].table',
      );
    }
  }
  if (registry && registry.table !== table) {
    changes.push({ kind: 'retargeted', before: `${schema}.${registry.table}`, after: `${schema}.${table}` });
  }

  // Which fields go to the fixed columns, which get columns of their own.
  const fixedByField = new Map<string, string>([
    [o.idField, FIXED_COLUMNS.id],
    [o.versionField, FIXED_COLUMNS.rowVersion],
    [createdField, FIXED_COLUMNS.createdAt],
    [modifiedField, FIXED_COLUMNS.modifiedAt],
  ]);
  const seen = new Set<string>();
  const fields: FieldMeta[] = [];
  for (const f of o.fields) {
    if (typeof f?.FieldName !== 'string' || f.FieldName === '' || seen.has(f.FieldName)) continue;
    seen.add(f.FieldName);
    fields.push(f);
  }
  const ownFields = fields.filter((f) => !fixedByField.has(f.FieldName));
  const registered = (registry?.fields ?? []).filter((e) => !e.fixed);
  const retired = registered.filter((e) => e.retired === true);
  const prior = new Map(registered.filter((e) => e.retired !== true).map((e) => [e.field, e]));
  const reporting = o.reportingSchema ?? undefined;
  const evolving: Evolution = {
    trx,
    schema,
    table,
    reporting,
    columns: existing.kind === 'table' ? existing.columns : undefined,
    taken: new Set([...registered.map((e) => e.column), ...Object.values(o.columns ?? {})]),
    changes,
  };
  await renameReservedColumns(evolving, registered);
  await retireReusedSlots(evolving, ownFields, prior, retired);
  const names = assignColumnNames(
    ownFields.map((f) => ({ field: f.FieldName, name: preferredColumnName(f, o.columnNames) })),
    new Map([...prior].map(([field, e]) => [field, e.column])),
    new Map(Object.entries(o.columns ?? {})),
  );
  if (existing.kind === 'table') await renamePinnedColumns(trx, qtable, existing.columns, prior, names, changes);

  // Decide each field column's kind and the DDL it needs.
  const entries: RegistryField[] = [];
  const addColumns: { column: string; kind: ColumnKind; field: FieldMeta }[] = [];
  const widen: string[] = [];
  for (const f of ownFields) {
    const column = names.get(f.FieldName)!;
    const pinnedKind = o.columnTypes?.[f.FieldName];
    const wanted = pinnedKind ?? columnKindFor(f);
    const before = prior.get(f.FieldName);
    const renamedTo = platformRename(before, f);
    if (renamedTo !== undefined) {
      changes.push({ kind: 'renamed', field: f.FieldName, column, before: before?.displayName ?? '', after: renamedTo });
    }
    let kind: ColumnKind = wanted;
    if (existing.kind === 'table') {
      const have = existing.columns.get(column);
      if (have === undefined) {
        addColumns.push({ column, kind, field: f });
        changes.push({ kind: 'added', field: f.FieldName, column, after: SQL_TYPE[kind], ...(before ? { before: 'missing' } : {}) });
      } else if (have === FORMATTED_TYPE[wanted]) {
        if (before?.removed) changes.push({ kind: 'back', field: f.FieldName, column });
      } else if (have === 'text') {
        kind = 'text';
        if (before?.removed) changes.push({ kind: 'back', field: f.FieldName, column });
        if (before === undefined || before.platformKind !== wanted)
          changes.push({ kind: 'kept-text', field: f.FieldName, column, before: 'text', after: SQL_TYPE[wanted] });
      } else {
        kind = 'text';
        widen.push(column);
        changes.push({ kind: 'widened', field: f.FieldName, column, before: have, after: SQL_TYPE[wanted] });
      }
    }
    const entry = registryEntry(f, column, kind, wanted, false);
    entries.push(pinnedKind === undefined ? entry : { ...entry, kindSource: 'lists[].columns' });
  }

  const ownNames = new Set(ownFields.map((f) => f.FieldName));
  const removed: RegistryField[] = [];
  for (const e of prior.values()) {
    if (ownNames.has(e.field)) continue;
    if (!e.removed) changes.push({ kind: 'removed', field: e.field, column: e.column });
    removed.push({ ...e, removed: true });
  }
  removed.push(...retired);

  // DDL.
  await createSchemaIfMissing(trx, schema);
  const allFields = [...entries, ...removed];
  if (existing.kind === 'none') {
    const columnsSql = [
      `${quoteIdent(FIXED_COLUMNS.id)} text primary key default (${quoteLiteral('local-')} || gen_random_uuid()::text)`,
      ...FIXED_COLUMN_TYPES.map(([c, t]) => `${quoteIdent(c)} ${t}`),
      ...entries.map((e) => `${quoteIdent(e.column)} ${SQL_TYPE[e.kind]}`),
      ...TRAILING_COLUMN_TYPES.map(([c, t]) => `${quoteIdent(c)} ${t}`),
    ];
    await trx.raw(`create table ${qtable} (\n  ${columnsSql.join(',\n  ')}\n)`);
    changes.push({ kind: 'table-created', column: `${schema}.${table}`, detail: String(entries.length) });
  } else {
    for (const [c, t] of [...FIXED_COLUMN_TYPES, ...TRAILING_COLUMN_TYPES]) {
      if (!existing.columns.has(c)) {
        await trx.raw(`alter table ${qtable} add column ${quoteIdent(c)} ${t}`);
        changes.push({ kind: 'fixed-column-added', column: c, after: t });
      }
    }
    for (const c of changes) if (c.kind === 'column-renamed') await renameShownColumn(trx, schema, table, reporting, c.before!, c.after!);
    for (const a of addColumns) await trx.raw(`alter table ${qtable} add column ${quoteIdent(a.column)} ${SQL_TYPE[a.kind]}`);
    // Postgres refuses to change the type of a column a view reads: the reporting views show it as NULL until they are rebuilt below.
    if (widen.length > 0 && reporting !== undefined)
      await detachViewColumns(trx, reportingViews(reporting, schema, table, allFields), new Set(widen));
    for (const column of widen) {
      await trx.raw(`alter table ${qtable} alter column ${quoteIdent(column)} type text using ${quoteIdent(column)}::text`);
    }
  }
  await ensureIndexes(trx, schema, table);
  const active: MappedColumn[] = entries.map(mappedColumn);
  await attachCaptureTriggers(trx, {
    schema,
    table,
    listName: list.name,
    columns: active,
    removedColumns: removed.map(({ field, column, kind }) => ({ field, column, kind })),
    versionField: o.versionField,
    pushDeletes: o.pushDeletes,
  });

  // Registry: fixed fields first, then the field columns in the platform's order, then removed ones.
  const fixedEntries: RegistryField[] = [...fixedByField].map(([fieldName, column]) => {
    const meta = fields.find((f) => f.FieldName === fieldName) ?? { FieldName: fieldName, FieldType: '', Type: '' };
    const kind: ColumnKind = column === FIXED_COLUMNS.id ? 'text' : column === FIXED_COLUMNS.rowVersion ? 'numeric' : 'timestamptz';
    return registryEntry(meta, column, kind, kind, true);
  });
  const fingerprint = fieldsFingerprint(fields);
  const timeZone = o.timeZone ?? registry?.conversion.timeZone;
  const omitsEmptyValues = o.omitsEmptyValues ?? registry?.conversion.omitsEmptyValues ?? false;
  if (existing.kind === 'table') {
    const stale = staleColumns({ entries, widen, fixedEntries, before: registry?.conversion.timeZone, now: timeZone });
    if (stale.columns.length > 0) {
      const r = await rederiveColumns(trx, { schema, table, listName: list.name }, stale.columns, timeZone ?? 'UTC');
      if (r.rows > 0)
        changes.push({
          kind: 'rederived',
          column: stale.columns.map((c) => c.column).join(', '),
          detail:
            `${r.rows} row(s) from _raw (${stale.why})` +
            (r.failedValues ? `; ${r.failedValues} value(s) did not convert and are NULL, kept in _raw` : ''),
        });
    }
  }
  const history = o.history ?? false;
  const title = o.title ?? registry?.title;
  await writeRegistry(trx, {
    name: list.name,
    appID: list.appID,
    listID: list.listID,
    table,
    fields: [...fixedEntries, ...allFields],
    fingerprint,
    conversion: { ...(timeZone === undefined ? {} : { timeZone }), ...(omitsEmptyValues ? { omitsEmptyValues } : {}) },
    history,
    ...(title !== undefined ? { title } : {}),
  });

  // What readers see: history, views and comments, all kept true on every call.
  if (history) await ensureHistoryTable(trx, { schema, table, fields: allFields, widened: widen });
  const described = {
    name: list.name,
    appID: list.appID,
    listID: list.listID,
    deletes: o.pushDeletes ? 'written back' : 'refused',
    ...(title !== undefined ? { title } : {}),
  } as const;
  await describeForReaders(trx, {
    schema,
    table,
    reporting,
    history,
    fields: [...fixedEntries, ...allFields],
    comment: tableComment(described),
  });

  const ids = await recordSchemaChanges(trx, list.name, changes, o.runId);
  for (const c of changes) {
    const where = { list: list.name, table: `${schema}.${table}`, kind: c.kind };
    if (WARNING_KINDS.has(c.kind)) o.logger?.warn(where, describeSchemaChange(c));
    else o.logger?.info(where, describeSchemaChange(c));
  }

  return createTableMapping({
    schema,
    table,
    listName: list.name,
    idField: o.idField,
    versionField: o.versionField,
    createdField,
    modifiedField,
    columns: active,
    removedColumns: removed.map(({ field, column, kind }) => ({ field, column, kind })),
    keptRawKeys: keptRawKeys(removed),
    ...(omitsEmptyValues ? { omitsEmptyValues } : {}),
    changes: changes.map(describeSchemaChange),
    schemaChanges: changes,
    schemaChangeIds: ids,
    history,
    fingerprint,
  });
}

/**
 * The users directory table (read-only mirror of `POST /users/search`).
 * Created when missing; missing columns are added.
 */
export async function ensureUsersTable(db: Knex | Knex.Transaction, schema: string, table: string): Promise<void> {
  assertIdentifier(schema);
  assertIdentifier(table);
  const q = qualifiedName(schema, table);
  const run = async (trx: Knex.Transaction): Promise<void> => {
    await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [DDL_LOCK_CLASS, `${schema}.${table}`]);
    await createSchemaIfMissing(trx, schema);
    const existing = await describeTable(trx, schema, table);
    if (existing.kind === 'other')
      throw new ConfigError(`${schema}.${table} exists but is not a table; choose another users.table.`, 'users.table');
    const columns: [string, string][] = USERS_COLUMNS.map((c) => [c, c === 'user_id' ? 'text primary key' : 'text']);
    columns.push([DIRECTORY_OWN_COLUMNS.raw, 'jsonb'], [DIRECTORY_OWN_COLUMNS.syncedAt, 'timestamptz']);
    if (existing.kind === 'none') {
      await trx.raw(`create table ${q} (\n  ${columns.map(([c, t]) => `${quoteIdent(c)} ${t}`).join(',\n  ')}\n)`);
      await trx.raw(`comment on table ${q} is ${quoteLiteral('listsync mirror of the platform users directory (POST /users/search).')}`);
      return;
    }
    if (!existing.columns.has('user_id'))
      throw new ConfigError(`${schema}.${table} exists but has no user_id column; choose another users.table or drop it.`, 'users.table');
    for (const [c, t] of columns) {
      if (!existing.columns.has(c)) await trx.raw(`alter table ${q} add column ${quoteIdent(c)} ${t.replace(' primary key', '')}`);
    }
  };
  await (isTransaction(db) ? run(db) : db.transaction(run));
}

/** Columns of the users table, in order (`_raw`, `_synced_at` follow). */
export const USERS_COLUMNS = ['user_id', 'name', 'email', 'account', 'photo', 'line_manager'] as const;

// ---------------------------------------------------------------- catalog

type TableDescription = { kind: 'none' } | { kind: 'other' } | { kind: 'table'; columns: Map<string, string> };

async function describeTable(db: Knex.Transaction, schema: string, table: string): Promise<TableDescription> {
  const rel = (await db.raw(
    `select c.oid, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ? and c.relname = ?`,
    [schema, table],
  )) as { rows: { oid: number; relkind: string }[] };
  const r = rel.rows[0];
  if (!r) return { kind: 'none' };
  if (r.relkind !== 'r' && r.relkind !== 'p') return { kind: 'other' };
  const cols = (await db.raw(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
       from pg_attribute a where a.attrelid = ? and a.attnum > 0 and not a.attisdropped`,
    [r.oid],
  )) as { rows: { name: string; type: string }[] };
  return { kind: 'table', columns: new Map(cols.rows.map((c) => [c.name, c.type])) };
}

async function ensureIndexes(db: Knex.Transaction, schema: string, table: string): Promise<void> {
  const qtable = qualifiedName(schema, table);
  const wanted: [string, string][] = [
    [objectName(table, 'modified_at_idx'), `(${quoteIdent(FIXED_COLUMNS.modifiedAt)})`],
    [objectName(table, 'created_at_idx'), `(${quoteIdent(FIXED_COLUMNS.createdAt)})`],
    // Small: only soft-deleted rows. Lets the upsert find rows to undelete cheaply.
    [objectName(table, 'deleted_idx'), `(${quoteIdent(FIXED_COLUMNS.id)}) where ${quoteIdent(FIXED_COLUMNS.deletedAt)} is not null`],
  ];
  const have = (await db.raw(`select indexname from pg_indexes where schemaname = ? and tablename = ?`, [schema, table])) as {
    rows: { indexname: string }[];
  };
  const names = new Set(have.rows.map((r) => r.indexname));
  for (const [name, def] of wanted) {
    if (names.has(name)) continue;
    await db.raw(`create index if not exists ${quoteIdent(name)} on ${qtable} ${def}`);
  }
}

/** The reporting views of a list: the live view, and the history view when the history table exists. */
function reportingViews(reporting: string, schema: string, table: string, fields: readonly RegistryField[]): ViewSpec[] {
  return [liveViewSpec(reporting, schema, table, fields), historyViewSpec(reporting, schema, table, fields)];
}

/**
 * A field column's new name in the history table and the reporting views too. A relation whose own
 * column is called `from` (the live view's `synced_at`, the history's `valid_from`) never showed the
 * field under that name: it is left alone there.
 */
async function renameShownColumn(
  trx: Knex.Transaction,
  schema: string,
  table: string,
  reporting: string | undefined,
  from: string,
  to: string,
): Promise<void> {
  const history = historyTableName(table);
  const fieldColumnIn = (own: readonly string[]): boolean => !own.includes(from);
  if (fieldColumnIn(OWN_COLUMNS_OF.history)) await renameColumnIfPresent(trx, schema, history, from, to);
  if (reporting === undefined) return;
  if (fieldColumnIn(OWN_COLUMNS_OF.liveView)) await renameColumnIfPresent(trx, reporting, table, from, to);
  if (fieldColumnIn(OWN_COLUMNS_OF.history)) await renameColumnIfPresent(trx, reporting, history, from, to);
}

/** What the steps that evolve an existing table's columns share. */
interface Evolution {
  trx: Knex.Transaction;
  schema: string;
  table: string;
  reporting: string | undefined;
  /** The table's columns and types (kept up to date by the renames); undefined when the table does not exist yet. */
  columns: Map<string, string> | undefined;
  /** Column names in use or promised: registry entries, pinned names, new names given so far. */
  taken: Set<string>;
  changes: SchemaChange[];
}

/** Renames a field column everywhere it is shown (table, history, views); only the registry when the table is missing. */
async function renameFieldColumn(ev: Evolution, from: string, to: string): Promise<void> {
  ev.taken.add(to);
  if (ev.columns === undefined || !ev.columns.has(from)) return;
  await ev.trx.raw(`alter table ${qualifiedName(ev.schema, ev.table)} rename column ${quoteIdent(from)} to ${quoteIdent(to)}`);
  ev.columns.set(to, ev.columns.get(from)!);
  ev.columns.delete(from);
  await renameShownColumn(ev.trx, ev.schema, ev.table, ev.reporting, from, to);
}

/** A column name that no field column, existing column or pinned name holds (and not reserved). */
function freeName(ev: Evolution, base: string): string {
  return freeColumnName(base, (c) => ev.taken.has(c) || (ev.columns?.has(c) ?? false));
}

/**
 * Field columns named like a column listsync adds itself (named before the name was reserved:
 * a field "Valid From" in a list that now keeps history, "Synced At" beside the view's `synced_at`)
 * are renamed to a free name, so that every table and view built from the mirror table can show both.
 */
async function renameReservedColumns(ev: Evolution, entries: readonly RegistryField[]): Promise<void> {
  for (const e of entries) {
    if (!isReservedColumn(e.column)) continue;
    const to = freeName(ev, e.column);
    await renameFieldColumn(ev, e.column, to);
    ev.changes.push({ kind: 'column-renamed', field: e.field, column: to, before: e.column, after: to, detail: 'reserved' });
    e.column = to;
  }
}

/**
 * Slots the platform gave to another field since the registry saw them: the old field (active or
 * removed) is retired: its column is renamed `<column>_removed` with its data, its raw values move to
 * `_raw` key `<field>@<column>` (which later rewrites of the row keep), and the slot's new field is
 * named and created like any new field. Taken out of `prior`, added to `retired`.
 */
async function retireReusedSlots(
  ev: Evolution,
  fields: readonly FieldMeta[],
  prior: Map<string, RegistryField>,
  retired: RegistryField[],
): Promise<void> {
  for (const f of fields) {
    const before = prior.get(f.FieldName);
    if (before === undefined || !isAnotherField(before, f)) continue;
    const kept = freeName(ev, withSuffix(before.column, '_removed'));
    await renameFieldColumn(ev, before.column, kept);
    const rawKey = `${f.FieldName}@${kept}`;
    if (ev.columns !== undefined) await moveRawValues(ev, f.FieldName, rawKey);
    prior.delete(f.FieldName);
    retired.push({ ...before, column: kept, removed: true, retired: true, rawKey });
    ev.changes.push({
      kind: 'slot-reused',
      field: f.FieldName,
      column: kept,
      before: fieldLabel(before.displayName, before.fieldId, before.storage, before.control),
      after: fieldLabel(f.DisplayName, fieldIdOf(f), describeField(f).storage, describeField(f).control),
      detail: rawKey,
    });
  }
}

/** Moves every row's `_raw` value of `field` to `rawKey`: the slot's old values stay whole, and the new field starts empty. */
async function moveRawValues(ev: Evolution, field: string, rawKey: string): Promise<void> {
  const raw = quoteIdent(FIXED_COLUMNS.raw);
  await markListsyncWriter(ev.trx);
  await ev.trx.raw(
    `update ${qualifiedName(ev.schema, ev.table)} set ${raw} = (${raw} - ?::text) || jsonb_build_object(?::text, ${raw} -> ?::text) where jsonb_exists(${raw}, ?::text)`,
    [escapeStorable(field), escapeStorable(rawKey), escapeStorable(field), escapeStorable(field)],
  );
}

function fieldLabel(display: string | undefined, id: string | undefined, storage: string | undefined, control: string | undefined): string {
  const kind = [storage, control].filter(Boolean).join('/');
  return `"${display ?? ''}"${id !== undefined ? ` FieldID ${id}` : ''}${kind ? ` ${kind}` : ''}`;
}

async function detachViewColumns(trx: Knex.Transaction, views: readonly ViewSpec[], columns: ReadonlySet<string>): Promise<void> {
  for (const v of views) if (await viewExists(trx, v.schema, v.name)) await ensureView(trx, v, { detached: columns });
}

/** Comments on the table, its history and its views; the views themselves. */
async function describeForReaders(
  trx: Knex.Transaction,
  d: { schema: string; table: string; reporting: string | undefined; history: boolean; fields: readonly RegistryField[]; comment: string },
): Promise<void> {
  const comments = columnComments(d.fields);
  const hist = historyTableName(d.table);
  const historyComment = `Versions of the rows of ${d.schema}.${d.table}, one per version listsync saw (valid_from..valid_to). ${d.comment}`;
  await syncComments(trx, d.schema, d.table, d.comment, comments);
  if (d.history) await syncComments(trx, d.schema, hist, historyComment, comments);
  if (d.reporting === undefined) return;
  const [live, versions] = reportingViews(d.reporting, d.schema, d.table, d.fields) as [ViewSpec, ViewSpec];
  await ensureView(trx, live);
  await syncComments(trx, live.schema, live.name, `Live rows (not deleted) of ${d.schema}.${d.table}. ${d.comment}`, comments);
  if (d.history || (await viewExists(trx, versions.schema, versions.name))) {
    await ensureView(trx, versions);
    await syncComments(trx, versions.schema, versions.name, historyComment, comments);
  }
}

function registryEntry(f: FieldMeta, column: string, kind: ColumnKind, platformKind: ColumnKind, fixed: boolean): RegistryField {
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
 * Renames existing columns whose field is pinned to another name in the config
 * (`lists[].columns`). The pinned name must be free; `columns` is updated.
 */
async function renamePinnedColumns(
  trx: Knex.Transaction,
  qtable: string,
  columns: Map<string, string>,
  prior: ReadonlyMap<string, RegistryField>,
  names: ReadonlyMap<string, string>,
  changes: SchemaChange[],
): Promise<void> {
  for (const [field, e] of prior) {
    const to = names.get(field);
    if (to === undefined || to === e.column || !columns.has(e.column)) continue;
    if (columns.has(to))
      throw new ConfigError(
        `lists[].columns pins field ${field} to column "${to}", but ${qtable} already has a column "${to}"; choose a free name.`,
        'lists[].columns',
      );
    await trx.raw(`alter table ${qtable} rename column ${quoteIdent(e.column)} to ${quoteIdent(to)}`);
    columns.set(to, columns.get(e.column)!);
    columns.delete(e.column);
    changes.push({ kind: 'column-renamed', field, column: to, before: e.column, after: to });
  }
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
