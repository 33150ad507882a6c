/**
 * Version history of a list (`lists[].history`): `<table>_history` in the
 * mirror schema holds one row per version the mirror saw: `id`,
 * `row_version`, `valid_from` (the platform's Modified of that version),
 * `valid_to` (where the next version starts, or when the item was found
 * deleted; null for the current one) and the field columns.
 *
 * Rows are written in the same transaction as the mirror row, by one
 * set-based statement per batch over the ids the upsert wrote
 * (`historyStatement`), and closed for rows reconcile marked deleted
 * (`closeDeletedVersions`). What it cannot know: versions that came and went
 * between two reads of the item are never seen, so never recorded; and a
 * delete is dated when reconcile found it, not when it happened.
 */
import type { Knex } from '../db.js';
import { SQL_TYPE } from './column-types.js';
import { arrayLiteral } from './pg-text.js';
import { objectName, qualifiedName, quoteIdent } from './naming.js';
import type { RegistryField } from './list-registry.js';
import { HISTORY_COLUMNS } from './own-columns.js';
import { FIXED_COLUMNS, type MappedColumn, type TableMapping } from './table-mapping.js';

export function historyTableName(table: string): string {
  return objectName(table, 'history');
}

/**
 * Creates `<table>_history` when missing (seeded with one open version per
 * live row) and adds the columns of fields it lacks. `widened` columns are
 * widened to text here too (the caller detaches views reading them first).
 */
export async function ensureHistoryTable(
  trx: Knex.Transaction,
  o: { schema: string; table: string; fields: readonly RegistryField[]; widened: readonly string[] },
): Promise<void> {
  const h = historyTableName(o.table);
  const qh = qualifiedName(o.schema, h);
  const fieldColumns = o.fields.filter((f) => !f.fixed);
  const have = (await trx.raw(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
       from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ? and c.relname = ? and a.attnum > 0 and not a.attisdropped`,
    [o.schema, h],
  )) as { rows: { name: string; type: string }[] };
  if (have.rows.length === 0) {
    const cols = [
      `${quoteIdent('id')} text not null`,
      `${quoteIdent('row_version')} bigint`,
      `${quoteIdent(HISTORY_COLUMNS.validFrom)} timestamptz`,
      `${quoteIdent(HISTORY_COLUMNS.validTo)} timestamptz`,
      ...fieldColumns.map((f) => `${quoteIdent(f.column)} ${SQL_TYPE[f.kind]}`),
    ];
    await trx.raw(`create table ${qh} (\n  ${cols.join(',\n  ')}\n)`);
    await trx.raw(`create unique index ${quoteIdent(objectName(h, 'version_key'))} on ${qh} (id, row_version)`);
    await trx.raw(`create index ${quoteIdent(objectName(h, 'open_idx'))} on ${qh} (id) where valid_to is null`);
    const t = qualifiedName(o.schema, o.table);
    const fc = fieldColumns.map((f) => quoteIdent(f.column));
    await trx.raw(
      `insert into ${qh} (id, row_version, valid_from, valid_to${fc.map((c) => `, ${c}`).join('')})
       select m.id, m.row_version, m.modified_at, null${fc.map((c) => `, m.${c}`).join('')}
         from ${t} m where m.${quoteIdent(FIXED_COLUMNS.deletedAt)} is null and m.row_version is distinct from -1`,
    );
    return;
  }
  const existing = new Map(have.rows.map((r) => [r.name, r.type]));
  for (const f of fieldColumns) {
    if (!existing.has(f.column)) await trx.raw(`alter table ${qh} add column ${quoteIdent(f.column)} ${SQL_TYPE[f.kind]}`);
    else if (o.widened.includes(f.column) && existing.get(f.column) !== 'text')
      await trx.raw(`alter table ${qh} alter column ${quoteIdent(f.column)} type text using ${quoteIdent(f.column)}::text`);
  }
}

/**
 * The statement that records the versions an upsert batch wrote (binding:
 * the ids written, as a text[] literal). Per id, in one statement:
 * - the same version still open, or closed by a delete and now back: reopened
 *   and its values refreshed (a field added later gets filled);
 * - another open version: closed where the new one starts;
 * - the new version: inserted, from the mirror row as it is now.
 */
export function historyStatement(mapping: Pick<TableMapping, 'schema' | 'table' | 'columns'>): string {
  const t = qualifiedName(mapping.schema, mapping.table);
  const h = qualifiedName(mapping.schema, historyTableName(mapping.table));
  const cols = mapping.columns.map((c: MappedColumn) => quoteIdent(c.column));
  const start = `coalesce(w.${quoteIdent(FIXED_COLUMNS.modifiedAt)}, now())`;
  return `
with w as (
  select m.id, m.row_version, m.${quoteIdent(FIXED_COLUMNS.modifiedAt)}${cols.map((c) => `, m.${c}`).join('')}
    from ${t} m where m.id = any(?::text[]) and m.${quoteIdent(FIXED_COLUMNS.deletedAt)} is null and m.row_version is distinct from -1),
same as (
  update ${h} h set valid_to = null${cols.map((c) => `, ${c} = w.${c}`).join('')}
    from w where h.id = w.id and h.row_version = w.row_version
     and not exists (select 1 from ${h} o where o.id = w.id and o.valid_to is null and o.row_version is distinct from w.row_version)
  returning h.id),
closed as (
  update ${h} h set valid_to = greatest(${start}, h.valid_from)
    from w where h.id = w.id and h.valid_to is null and (h.row_version is distinct from w.row_version or w.row_version is null)
  returning h.id)
insert into ${h} (id, row_version, valid_from, valid_to${cols.map((c) => `, ${c}`).join('')})
select w.id, w.row_version, ${start}, null${cols.map((c) => `, w.${c}`).join('')}
  from w
 where w.row_version is null
    or not exists (select 1 from ${h} x where x.id = w.id and x.row_version = w.row_version)`;
}

/**
 * Closes the open version of rows marked deleted (`valid_to` = when the
 * mirror marked them). Set-based, through the soft-delete partial index.
 */
export async function closeDeletedVersions(trx: Knex.Transaction, mapping: Pick<TableMapping, 'schema' | 'table'>): Promise<number> {
  const t = qualifiedName(mapping.schema, mapping.table);
  const h = qualifiedName(mapping.schema, historyTableName(mapping.table));
  const d = quoteIdent(FIXED_COLUMNS.deletedAt);
  const res = (await trx.raw(
    `with closed as (
       update ${h} h set valid_to = greatest(m.${d}, h.valid_from)
         from ${t} m where m.${d} is not null and m.id = h.id and h.valid_to is null
       returning 1)
     select (select count(*) from closed)::int as closed`,
  )) as { rows: { closed: number }[] };
  return res.rows[0]!.closed;
}

/** Reopens the version of rows undeleted by ids (reconcile found them again at the same version). */
export async function reopenVersions(
  trx: Knex.Transaction,
  mapping: Pick<TableMapping, 'schema' | 'table'>,
  ids: readonly string[],
): Promise<number> {
  if (ids.length === 0) return 0;
  const t = qualifiedName(mapping.schema, mapping.table);
  const h = qualifiedName(mapping.schema, historyTableName(mapping.table));
  const res = (await trx.raw(
    `update ${h} h set valid_to = null from ${t} m
      where m.id = any(?::text[]) and m.id = h.id and m.${quoteIdent(FIXED_COLUMNS.deletedAt)} is null and h.row_version = m.row_version
        and not exists (select 1 from ${h} o where o.id = h.id and o.valid_to is null)`,
    [arrayLiteral(ids)],
  )) as { rowCount: number | null };
  return res.rowCount ?? 0;
}
