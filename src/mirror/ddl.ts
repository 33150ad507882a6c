/**
 * Mirror tables from field metadata: created when missing, evolved when the
 * platform's fields change, and registered in `listsync.lists`.
 *
 * Evolution never drops data: a new field adds a column; a removed field keeps
 * its column (no longer written); a type change the column cannot hold widens
 * the column to text (`alter column ... type text using col::text`). Every such
 * step is described in the returned mapping's `changes` and logged.
 *
 * What to change is decided by `planSchema` (schema-plan.ts, pure, tested
 * without a database in test/mirror/schema-plan.test.ts); this file reads the
 * catalog and the registry, runs the plan's DDL and keeps the registry, the
 * triggers, the views and the change log true to it.
 *
 * Identifiers are always quoted (`quoteIdent`); values always travel as
 * bindings; the few string literals DDL needs (comments, trigger arguments) go
 * through `quoteLiteral`.
 */
import type { Knex } from '../db.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { FieldMeta } from '../platform/types.js';
import { SQL_TYPE, type ColumnKind } from './column-types.js';
import { assertIdentifier, objectName, qualifiedName, quoteIdent, quoteLiteral, type ColumnNaming } from './naming.js';
import { DIRECTORY_OWN_COLUMNS, OWN_COLUMNS_OF } from './own-columns.js';
import { rederiveColumns } from './rederive.js';
import { keptRawKeys, mappedColumn, readRegistry, writeRegistry, type RegistryEntry, type RegistryField } from './list-registry.js';
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
import { describeSchemaChange, WARNING_KINDS, type SchemaChange } from '../schema-change.js';
import { FIXED_COLUMN_TYPES, planSchema, TRAILING_COLUMN_TYPES, type SchemaPlan, type TableDescription } from './schema-plan.js';
import { assertCaptureFunction, attachCaptureTriggers, tableOwner } from './triggers.js';
import { escapeStorable } from '../storable.js';
import { isTransaction, markListsyncWriter } from './own-writes.js';

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

/** Reads what the table and the registry are, plans the evolution (schema-plan.ts), then runs it. */
async function ensureInTransaction(trx: Knex.Transaction, o: EnsureMirrorTableOptions): Promise<TableMapping> {
  const { schema, list } = o;
  const table = list.table;
  await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [DDL_LOCK_CLASS, `${schema}.${table}`]);
  await assertCaptureFunction(trx);
  const registry = await readRegistry(trx, list.name, { forUpdate: true });
  const existing = await describeTable(trx, schema, table);
  const owner = existing.kind === 'table' ? await tableOwner(trx, schema, table) : undefined;
  const plan = planSchema({
    schema,
    table,
    listName: list.name,
    existing,
    owner,
    registry,
    fields: o.fields,
    idField: o.idField,
    versionField: o.versionField,
    createdField: o.createdField ?? 'Created',
    modifiedField: o.modifiedField ?? 'Modified',
    timeZone: o.timeZone,
    columnNames: o.columnNames,
    columns: o.columns,
    columnTypes: o.columnTypes,
  });
  return applySchemaPlan(trx, o, plan, registry);
}

/** Runs a plan: the DDL, the triggers, the re-derived columns, the registry, what readers see, the change log. */
async function applySchemaPlan(
  trx: Knex.Transaction,
  o: EnsureMirrorTableOptions,
  plan: SchemaPlan,
  registry: RegistryEntry | undefined,
): Promise<TableMapping> {
  const { schema, list } = o;
  const table = list.table;
  const reporting = o.reportingSchema ?? undefined;
  const changes = [...plan.changes];
  const allFields = [...plan.entries, ...plan.removed];
  await runTableDdl(trx, { schema, table, reporting }, plan, allFields);
  await ensureIndexes(trx, schema, table);
  const active: MappedColumn[] = plan.entries.map(mappedColumn);
  const removedColumns = plan.removed.map(({ field, column, kind }) => ({ field, column, kind }));
  await attachCaptureTriggers(trx, {
    schema,
    table,
    listName: list.name,
    columns: active,
    removedColumns,
    versionField: o.versionField,
    pushDeletes: o.pushDeletes,
  });
  const rederived = await rederiveStale(trx, { schema, table, listName: list.name }, plan);
  if (rederived) changes.push(rederived);
  const omitsEmptyValues = o.omitsEmptyValues ?? registry?.conversion.omitsEmptyValues ?? false;
  const history = o.history ?? false;
  const title = o.title ?? registry?.title;
  const timeZone = plan.timeZone;
  await writeRegistry(trx, {
    name: list.name,
    appID: list.appID,
    listID: list.listID,
    table,
    // Fixed fields first, then the field columns in the platform's order, then removed ones.
    fields: [...plan.fixedEntries, ...allFields],
    fingerprint: plan.fingerprint,
    conversion: { ...(timeZone === undefined ? {} : { timeZone }), ...(omitsEmptyValues ? { omitsEmptyValues } : {}) },
    history,
    ...(title !== undefined ? { title } : {}),
  });
  // What readers see: history, views and comments, all kept true on every call.
  if (history) await ensureHistoryTable(trx, { schema, table, fields: allFields, widened: plan.widen });
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
    fields: [...plan.fixedEntries, ...allFields],
    comment: tableComment(described),
  });
  const ids = await recordAndLog(trx, o, changes);
  return createTableMapping({
    schema,
    table,
    listName: list.name,
    idField: o.idField,
    versionField: o.versionField,
    createdField: o.createdField ?? 'Created',
    modifiedField: o.modifiedField ?? 'Modified',
    columns: active,
    removedColumns,
    keptRawKeys: keptRawKeys(plan.removed),
    ...(omitsEmptyValues ? { omitsEmptyValues } : {}),
    changes: changes.map(describeSchemaChange),
    schemaChanges: changes,
    schemaChangeIds: ids,
    history,
    fingerprint: plan.fingerprint,
  });
}

interface TableRef {
  schema: string;
  table: string;
  reporting: string | undefined;
}

/** The plan's DDL on the table: renames and raw moves, then create it, or add and widen its columns. */
async function runTableDdl(trx: Knex.Transaction, t: TableRef, plan: SchemaPlan, allFields: readonly RegistryField[]): Promise<void> {
  const qtable = qualifiedName(t.schema, t.table);
  for (const step of plan.columnSteps) {
    if (step.op === 'move-raw') await moveRawValues(trx, qtable, step.field, step.rawKey);
    else {
      await trx.raw(`alter table ${qtable} rename column ${quoteIdent(step.from)} to ${quoteIdent(step.to)}`);
      if (step.shown) await renameShownColumn(trx, t.schema, t.table, t.reporting, step.from, step.to);
    }
  }
  await createSchemaIfMissing(trx, t.schema);
  if (plan.create) {
    const columnsSql = [
      `${quoteIdent(FIXED_COLUMNS.id)} text primary key default (${quoteLiteral('local-')} || gen_random_uuid()::text)`,
      ...FIXED_COLUMN_TYPES.map(([c, ty]) => `${quoteIdent(c)} ${ty}`),
      ...plan.entries.map((e) => `${quoteIdent(e.column)} ${SQL_TYPE[e.kind]}`),
      ...TRAILING_COLUMN_TYPES.map(([c, ty]) => `${quoteIdent(c)} ${ty}`),
    ];
    await trx.raw(`create table ${qtable} (\n  ${columnsSql.join(',\n  ')}\n)`);
    return;
  }
  for (const [c, ty] of plan.fixedColumnsToAdd) await trx.raw(`alter table ${qtable} add column ${quoteIdent(c)} ${ty}`);
  for (const r of plan.shownRenames) await renameShownColumn(trx, t.schema, t.table, t.reporting, r.from, r.to);
  for (const a of plan.addColumns) await trx.raw(`alter table ${qtable} add column ${quoteIdent(a.column)} ${SQL_TYPE[a.kind]}`);
  // Postgres refuses to change the type of a column a view reads: the reporting views show it as NULL until they are rebuilt.
  if (plan.widen.length > 0 && t.reporting !== undefined)
    await detachViewColumns(trx, reportingViews(t.reporting, t.schema, t.table, allFields), new Set(plan.widen));
  for (const column of plan.widen) {
    await trx.raw(`alter table ${qtable} alter column ${quoteIdent(column)} type text using ${quoteIdent(column)}::text`);
  }
}

/** Re-derives the plan's stale columns from `_raw`; the change to log when rows were rewritten. */
async function rederiveStale(
  trx: Knex.Transaction,
  target: { schema: string; table: string; listName: string },
  plan: SchemaPlan,
): Promise<SchemaChange | undefined> {
  const stale = plan.stale;
  if (stale.columns.length === 0) return undefined;
  const r = await rederiveColumns(trx, target, stale.columns, plan.timeZone ?? 'UTC');
  if (r.rows === 0) return undefined;
  return {
    kind: 'rederived',
    column: stale.columns.map((c) => c.column).join(', '),
    detail:
      `${r.rows} row(s) from _raw (${stale.why})` +
      (r.failedValues ? `; ${r.failedValues} value(s) did not convert and are NULL, kept in _raw` : ''),
  };
}

/** Keeps the changes in `listsync.schema_changes` and logs each one (warnings for those someone may want to look at). */
async function recordAndLog(trx: Knex.Transaction, o: EnsureMirrorTableOptions, changes: readonly SchemaChange[]): Promise<number[]> {
  const ids = await recordSchemaChanges(trx, o.list.name, changes, o.runId);
  for (const c of changes) {
    const where = { list: o.list.name, table: `${o.schema}.${o.list.table}`, kind: c.kind };
    if (WARNING_KINDS.has(c.kind)) o.logger?.warn(where, describeSchemaChange(c));
    else o.logger?.info(where, describeSchemaChange(c));
  }
  return ids;
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

/** What the catalog says of a table name. */
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

/** Moves every row's `_raw` value of `field` to `rawKey`: the slot's old values stay whole, and the new field starts empty. */
async function moveRawValues(trx: Knex.Transaction, qtable: string, field: string, rawKey: string): Promise<void> {
  const raw = quoteIdent(FIXED_COLUMNS.raw);
  await markListsyncWriter(trx);
  await trx.raw(
    `update ${qtable} set ${raw} = (${raw} - ?::text) || jsonb_build_object(?::text, ${raw} -> ?::text) where jsonb_exists(${raw}, ?::text)`,
    [escapeStorable(field), escapeStorable(rawKey), escapeStorable(field), escapeStorable(field)],
  );
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
