/**
 * The mirror as readers see it: comments on every table, view and column, and
 * the reporting views (`database.reportingSchema`), one per list with only
 * live rows and the columns people report on.
 *
 * Comments are compared with what the catalog holds and written only when
 * they differ, so an unchanged list takes no locks for them.
 *
 * Views only ever grow: `create or replace view` keeps existing columns in
 * their order and appends new ones, so views and reports built on top keep
 * working (nothing is dropped with CASCADE). A column whose type changed (a
 * field widened to text) cannot be replaced in place: when nothing depends on
 * the view it is dropped and created again in the same transaction (readers
 * never see it missing); when something does, the column keeps its old type
 * (values that no longer cast read NULL, through `listsync.try_cast`) and the
 * text is appended as `<column>_text` (`textCopyName`: cut and hashed to fit
 * 63 bytes).
 */
import type { Knex } from '../db.js';
import { ConfigError } from '../errors.js';
import { objectName, qualifiedName, quoteIdent, quoteLiteral } from './naming.js';
import type { RegistryField } from './list-registry.js';
import { escapeStorable } from '../storable.js';
import { HISTORY_COLUMNS, OWN_COLUMNS_OF, VIEW_SYNCED_AT } from './own-columns.js';
import { FIXED_COLUMNS } from './table-mapping.js';

/** What the fixed columns of a mirror table hold. */
export const SYSTEM_COLUMN_COMMENTS: Readonly<Record<string, string>> = {
  [FIXED_COLUMNS.id]:
    "the item's ID on the platform (ListDataID); local-<uuid> for a row inserted here and not yet created on the platform",
  [FIXED_COLUMNS.rowVersion]:
    "the item's version on the platform (RowVersion); write-back sends it so a concurrent edit is never overwritten",
  [FIXED_COLUMNS.createdAt]: 'when the item was created on the platform (Created)',
  [FIXED_COLUMNS.modifiedAt]: 'when the item was last modified on the platform (Modified)',
  [FIXED_COLUMNS.raw]: 'the item exactly as the platform last sent it (JSON); values that did not convert to their column are kept here',
  [FIXED_COLUMNS.syncedAt]: 'when listsync last wrote this row from the platform',
  [FIXED_COLUMNS.deletedAt]: 'when reconcile found the item deleted on the platform (null while it exists); the row is kept',
  [VIEW_SYNCED_AT]: 'when listsync last wrote this row from the platform',
  [HISTORY_COLUMNS.validFrom]: "when this version started: the platform's Modified of the version",
  [HISTORY_COLUMNS.validTo]: 'when the next version started, or when the item was found deleted; null for the current version',
};

export interface ListDescription {
  name: string;
  appID: string;
  listID: string;
  /** The list's title on the platform, when known. */
  title?: string;
  /** How deletes of mirror rows are handled (`lists[].pushDeletes`). */
  deletes?: 'refused' | 'written back';
}

/** The mirror table's comment: the list's title and IDs, and what write-back does. */
export function tableComment(l: ListDescription): string {
  const title = l.title ? `"${l.title}" ` : '';
  const deletes =
    l.deletes === 'written back'
      ? 'deletes are written back too (lists[].pushDeletes), version-checked'
      : 'deleting rows is refused (delete items on the platform; reconcile marks them in _deleted_at)';
  return `listsync mirror of list ${title}(listsync list "${l.name}", app ${l.appID}, list ${l.listID}). Edits and inserts are written back to the platform; ${deletes}.`;
}

/** A field column's comment: display name, field name, storage kind and control. */
export function fieldColumnComment(e: Pick<RegistryField, 'field' | 'displayName' | 'storage' | 'control' | 'removed'>): string {
  const named = e.displayName && e.displayName !== e.field;
  const label = named ? `"${e.displayName}" (platform field ${e.field}, ` : `platform field ${e.field} (`;
  const gone = e.removed ? '; no longer on the platform, kept with its data' : '';
  return `${label}storage ${e.storage || '?'}, control ${e.control || '?'})${gone}`;
}

/** Comments for a relation's columns, from the registry's field entries and the fixed columns. */
export function columnComments(fields: readonly RegistryField[]): Map<string, string> {
  const out = new Map<string, string>(Object.entries(SYSTEM_COLUMN_COMMENTS));
  for (const f of fields) if (!f.fixed) out.set(f.column, fieldColumnComment(f));
  return out;
}

/**
 * Sets the relation's comment (when `relation` is given) and its columns'
 * comments (for columns it has), writing only those that differ.
 */
export async function syncComments(
  trx: Knex.Transaction,
  schema: string,
  name: string,
  relation: string | undefined,
  columns: ReadonlyMap<string, string>,
): Promise<void> {
  const q = qualifiedName(schema, name);
  const res = (await trx.raw(
    `select a.attname as name, col_description(c.oid, a.attnum) as comment, obj_description(c.oid, 'pg_class') as rel, c.relkind
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = ? and c.relname = ?`,
    [schema, name],
  )) as { rows: { name: string; comment: string | null; rel: string | null; relkind: string }[] };
  if (res.rows.length === 0) return;
  const what = res.rows[0]!.relkind === 'v' ? 'view' : 'table';
  // Comments quote the platform's names: one holding NUL or a lone surrogate (which PostgreSQL text cannot hold) is
  // stored escaped (src/storable.ts), so unescapeStorable gives it back exactly.
  const rel = relation === undefined ? undefined : escapeStorable(relation);
  if (rel !== undefined && res.rows[0]!.rel !== rel) await trx.raw(`comment on ${what} ${q} is ${quoteLiteral(rel)}`);
  for (const r of res.rows) {
    const found = columns.get(r.name) ?? textCopyComment(r.name, columns);
    const want = found === undefined ? undefined : escapeStorable(found);
    if (want !== undefined && want !== r.comment) await trx.raw(`comment on column ${q}.${quoteIdent(r.name)} is ${quoteLiteral(want)}`);
  }
}

function textCopyComment(name: string, columns: ReadonlyMap<string, string>): string | undefined {
  const base = textCopyOf(name, columns.keys());
  const of = base === undefined ? undefined : columns.get(base);
  return of === undefined ? undefined : `as text (the field was widened to text on the platform): ${of}`;
}

/**
 * The name of the text copy of a widened `column` in a view something is
 * built on: `<column>_text`, cut and given a hash when that would pass 63
 * bytes (so it never collides with another column's copy).
 */
export function textCopyName(column: string): string {
  return objectName(column, 'text');
}

/** The column (of `candidates`) whose text copy is called `name`, if any. */
function textCopyOf(name: string, candidates: Iterable<string>): string | undefined {
  if (!name.endsWith('_text')) return undefined;
  for (const c of candidates) if (textCopyName(c) === name) return c;
  return undefined;
}

// ---------------------------------------------------------------- views

/** A view column: its name and the base column it shows (`_synced_at` as `synced_at`). */
export interface ViewColumn {
  name: string;
  source: string;
}

export interface ViewSpec {
  /** Where the view lives. */
  schema: string;
  name: string;
  /** The relation it reads. */
  baseSchema: string;
  base: string;
  /** The columns wanted, in order for a new view; existing views keep their order and get new ones appended. */
  columns: readonly ViewColumn[];
  /** `where` condition on the base (alias `t`), if any. */
  where?: string;
}

/** The live view's columns: id, the field columns, created_at, modified_at, synced_at. */
export function liveViewColumns(fields: readonly RegistryField[]): ViewColumn[] {
  const F = FIXED_COLUMNS;
  return [
    { name: F.id, source: F.id },
    ...fields.filter((f) => !f.fixed).map((f) => ({ name: f.column, source: f.column })),
    { name: F.createdAt, source: F.createdAt },
    { name: F.modifiedAt, source: F.modifiedAt },
    { name: VIEW_SYNCED_AT, source: F.syncedAt },
  ];
}

/** The live view of a list's table. */
export function liveViewSpec(reportingSchema: string, schema: string, table: string, fields: readonly RegistryField[]): ViewSpec {
  return {
    schema: reportingSchema,
    name: table,
    baseSchema: schema,
    base: table,
    columns: liveViewColumns(fields),
    where: `t.${quoteIdent(FIXED_COLUMNS.deletedAt)} is null`,
  };
}

/** The history view of a list (over `<table>_history`). */
export function historyViewSpec(reportingSchema: string, schema: string, table: string, fields: readonly RegistryField[]): ViewSpec {
  const h = objectName(table, 'history');
  const cols = [...OWN_COLUMNS_OF.history, ...fields.filter((f) => !f.fixed).map((f) => f.column)];
  return { schema: reportingSchema, name: h, baseSchema: schema, base: h, columns: cols.map((c) => ({ name: c, source: c })) };
}

interface RelationColumns {
  oid: number;
  kind: string;
  columns: { name: string; type: string }[];
}

async function relationColumns(trx: Knex.Transaction, schema: string, name: string): Promise<RelationColumns | undefined> {
  const res = (await trx.raw(
    `select c.oid, c.relkind, a.attname as name, format_type(a.atttypid, a.atttypmod) as type
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = ? and c.relname = ?
      order by a.attnum`,
    [schema, name],
  )) as { rows: { oid: number; relkind: string; name: string | null; type: string | null }[] };
  const first = res.rows[0];
  if (!first) return undefined;
  return {
    oid: first.oid,
    kind: first.relkind,
    columns: res.rows.filter((r) => r.name !== null).map((r) => ({ name: r.name!, type: r.type! })),
  };
}

/** Whether views (or rules) other than the view itself are built on it. */
async function hasDependents(trx: Knex.Transaction, viewOid: number): Promise<boolean> {
  const res = (await trx.raw(
    `select 1 from pg_depend d join pg_rewrite r on r.oid = d.objid
      where d.classid = 'pg_rewrite'::regclass and d.refobjid = ? and r.ev_class <> ? limit 1`,
    [viewOid, viewOid],
  )) as { rows: unknown[] };
  return res.rows.length > 0;
}

/**
 * Creates the view, or appends the columns it lacks; handles a base column
 * whose type changed (see the module comment). `detached` columns are shown
 * as NULL of their current type: used just before their base column's type
 * is altered, which Postgres refuses while a view reads it.
 */
export async function ensureView(trx: Knex.Transaction, spec: ViewSpec, options: { detached?: ReadonlySet<string> } = {}): Promise<void> {
  const base = await relationColumns(trx, spec.baseSchema, spec.base);
  if (!base) return;
  const baseType = new Map(base.columns.map((c) => [c.name, c.type]));
  const existing = await relationColumns(trx, spec.schema, spec.name);
  if (existing && existing.kind !== 'v') {
    throw new ConfigError(
      `${spec.schema}.${spec.name} exists but is not a view; listsync keeps a reporting view there. Rename it, or set database.reportingSchema to another schema (null turns the views off).`,
      'database.reportingSchema',
    );
  }
  const wanted = spec.columns.filter((c) => baseType.has(c.source));
  const sourceOf = new Map(wanted.map((c) => [c.name, c.source]));
  const expr = (source: string): string => `t.${quoteIdent(source)}`;

  if (!existing) {
    await createSchemaIfMissing(trx, spec.schema);
    await createView(
      trx,
      spec,
      wanted.map((c) => `${expr(c.source)} as ${quoteIdent(c.name)}`),
    );
    return;
  }

  // Existing columns keep their place; what changed type is resolved below.
  const select: string[] = [];
  const retyped: { name: string; source: string; type: string }[] = [];
  const have = new Set(existing.columns.map((c) => c.name));
  for (const c of existing.columns) {
    const source = sourceOf.get(c.name) ?? textCopySource(c.name, sourceOf, baseType) ?? (baseType.has(c.name) ? c.name : undefined);
    const isCopy = !sourceOf.has(c.name) && source !== undefined && source !== c.name;
    if (source === undefined || options.detached?.has(source)) {
      select.push(`null::${c.type} as ${quoteIdent(c.name)}`);
    } else if (isCopy) {
      select.push(`${expr(source)}::text as ${quoteIdent(c.name)}`);
    } else if (baseType.get(source) === c.type) {
      select.push(`${expr(source)} as ${quoteIdent(c.name)}`);
    } else {
      retyped.push({ name: c.name, source, type: c.type });
      select.push(`listsync.try_cast(${expr(source)}::text, null::${c.type}) as ${quoteIdent(c.name)}`);
    }
  }
  const appended = wanted.filter((c) => !have.has(c.name));

  if (retyped.length > 0 && !(await hasDependents(trx, existing.oid))) {
    // Nothing is built on the view: recreate it with the new types, columns in the same order.
    const order = [...existing.columns.map((c) => c.name).filter((n) => sourceOf.has(n)), ...appended.map((c) => c.name)];
    await trx.raw(`drop view ${qualifiedName(spec.schema, spec.name)}`);
    await createView(
      trx,
      spec,
      order.map((n) => `${expr(sourceOf.get(n)!)} as ${quoteIdent(n)}`),
    );
    return;
  }
  for (const r of retyped) {
    const copy = textCopyName(r.name);
    if (!have.has(copy) && !appended.some((c) => c.name === copy)) select.push(`${expr(r.source)}::text as ${quoteIdent(copy)}`);
  }
  for (const c of appended) select.push(`${expr(c.source)} as ${quoteIdent(c.name)}`);
  // Nothing new: leave the view alone (no lock taken).
  if (appended.length === 0 && retyped.length === 0 && !options.detached?.size && !select.some((s) => s.startsWith('null::'))) return;
  await trx.raw(
    `create or replace view ${qualifiedName(spec.schema, spec.name)} as\nselect ${select.join(',\n       ')}\n  from ${qualifiedName(spec.baseSchema, spec.base)} t${spec.where ? `\n where ${spec.where}` : ''}`,
  );
}

/** `<col>_text` is the text copy of a widened `<col>` that reports still see with its old type. */
function textCopySource(name: string, sourceOf: ReadonlyMap<string, string>, baseType: ReadonlyMap<string, string>): string | undefined {
  const column = textCopyOf(name, sourceOf.keys());
  const of = column === undefined ? undefined : sourceOf.get(column);
  return of !== undefined && baseType.has(of) ? of : undefined;
}

async function createView(trx: Knex.Transaction, spec: ViewSpec, select: readonly string[]): Promise<void> {
  await trx.raw(
    `create view ${qualifiedName(spec.schema, spec.name)} as\nselect ${select.join(',\n       ')}\n  from ${qualifiedName(spec.baseSchema, spec.base)} t${spec.where ? `\n where ${spec.where}` : ''}`,
  );
}

/** Serialises the creation of one schema across transactions (first key of the two-key advisory lock space: 'lssc'). */
const SCHEMA_LOCK_CLASS = 0x6c73_7363;

/**
 * Creates a schema that does not exist yet. Two transactions creating the same schema at once (lists
 * set up together) would both pass `if not exists` and one fail on the catalog's unique index: the
 * creation is serialised, and the second sees the first's schema once it commits.
 */
export async function createSchemaIfMissing(trx: Knex.Transaction, schema: string): Promise<void> {
  const exists = async () =>
    ((await trx.raw('select 1 from pg_namespace where nspname = ?', [schema])) as { rows: unknown[] }).rows.length > 0;
  if (await exists()) return;
  await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [SCHEMA_LOCK_CLASS, schema]);
  if (!(await exists())) await trx.raw(`create schema if not exists ${quoteIdent(schema)}`);
}

/** Whether a view exists (for detaching columns before their type is altered). */
export async function viewExists(trx: Knex.Transaction, schema: string, name: string): Promise<boolean> {
  const r = await relationColumns(trx, schema, name);
  return r?.kind === 'v';
}

/**
 * Renames a column of a relation (a view or the history table) when it has
 * `from` and not `to`: a column pinned to another name (lists[].columns) is
 * renamed everywhere it is shown; views built on it follow (they refer to it
 * by position, not name).
 */
export async function renameColumnIfPresent(trx: Knex.Transaction, schema: string, name: string, from: string, to: string): Promise<void> {
  const r = await relationColumns(trx, schema, name);
  if (!r || !r.columns.some((c) => c.name === from) || r.columns.some((c) => c.name === to)) return;
  await trx.raw(
    `alter ${r.kind === 'v' ? 'view' : 'table'} ${qualifiedName(schema, name)} rename column ${quoteIdent(from)} to ${quoteIdent(to)}`,
  );
}
