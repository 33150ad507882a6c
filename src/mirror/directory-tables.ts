/**
 * Mirror tables of the organization directory (departments, groups, group
 * members, positions): the entry as the platform sent it in `_raw`, typed
 * text columns for the keys known, `_synced_at`. The directory is read whole
 * each run, so a table holds exactly what the last successful read returned:
 * an entry is rewritten only when its `_raw` changed, and entries no longer
 * listed are removed.
 */
import type { Knex } from '../db.js';
import { assertIdentifier, qualifiedName, quoteIdent } from './naming.js';
import { DIRECTORY_OWN_COLUMNS } from './own-columns.js';
import { arrayLiteral } from './pg-text.js';
import { closestText, storableJson } from '../storable.js';
import { createSchemaIfMissing, syncComments } from './reporting.js';
import { scalarString } from './convert.js';
import { withListsyncWriter } from './own-writes.js';

export interface DirectoryColumn {
  column: string;
  /** Keys read for it, first present wins (answer shapes are not documented). */
  keys: readonly string[];
  comment: string;
}

export interface DirectoryTableSpec {
  /** Describes the table in its comment. */
  what: string;
  /** Columns, the key columns first. */
  columns: readonly DirectoryColumn[];
  /** How many of the first columns form the primary key. */
  keyCount: number;
}

const idKeys = (...named: string[]): string[] => [...named, 'ID', 'Id', 'id'];

export const DIRECTORY_TABLES = {
  departments: {
    what: 'departments (GET /departments?parentId=0)',
    keyCount: 1,
    columns: [
      { column: 'department_id', keys: idKeys('DepartmentID', 'DeptID', 'DepartmentId'), comment: "the department's ID on the platform" },
      { column: 'name', keys: ['Name', 'DepartmentName'], comment: 'department name' },
      {
        column: 'parent_id',
        keys: ['ParentID', 'ParentId', 'ParentDepartmentID'],
        comment: 'the parent department (department_id); 0 or empty for a root',
      },
      {
        column: 'manager',
        keys: ['Manager', 'ManagerID', 'ManagerId'],
        comment: "the department's manager (a user_id of the users table)",
      },
    ],
  },
  groups: {
    what: 'groups (GET /groups)',
    keyCount: 1,
    columns: [
      { column: 'group_id', keys: idKeys('GroupID', 'GroupId'), comment: "the group's ID on the platform" },
      { column: 'name', keys: ['Name', 'GroupName'], comment: 'group name' },
      { column: 'description', keys: ['Description', 'Remark'], comment: 'group description' },
    ],
  },
  groupMembers: {
    what: 'group members (GET /groups/{id}/users), one row per group and user',
    keyCount: 2,
    columns: [
      { column: 'group_id', keys: ['_GroupID'], comment: 'the group (group_id of the groups table)' },
      { column: 'user_id', keys: ['UserID', 'UserId', 'ID', 'Id'], comment: 'the member (user_id of the users table)' },
      { column: 'name', keys: ['Name', 'UserName'], comment: "the member's name" },
      { column: 'email', keys: ['Email'], comment: "the member's e-mail address" },
    ],
  },
  positions: {
    what: 'positions (GET /positions)',
    keyCount: 1,
    columns: [
      { column: 'position_id', keys: idKeys('PositionID', 'PositionId'), comment: "the position's ID on the platform" },
      { column: 'name', keys: ['Name', 'PositionName'], comment: 'position name' },
    ],
  },
} as const satisfies Record<string, DirectoryTableSpec>;

/** Creates the table when missing, adds missing columns, keeps the comments. */
export async function ensureDirectoryTable(
  db: Knex | Knex.Transaction,
  schema: string,
  table: string,
  spec: DirectoryTableSpec,
): Promise<void> {
  assertIdentifier(schema);
  assertIdentifier(table);
  const q = qualifiedName(schema, table);
  await withListsyncWriter(db, async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`directory ${schema}.${table}`]);
    await createSchemaIfMissing(trx, schema);
    const have = (await trx.raw(
      `select a.attname as name from pg_attribute a where a.attrelid = to_regclass(?) and a.attnum > 0 and not a.attisdropped`,
      [`${quoteIdent(schema)}.${quoteIdent(table)}`],
    )) as { rows: { name: string }[] };
    const existing = new Set(have.rows.map((r) => r.name));
    const columns: [string, string][] = [
      ...spec.columns.map((c) => [c.column, 'text'] as [string, string]),
      [DIRECTORY_OWN_COLUMNS.raw, 'jsonb'],
      [DIRECTORY_OWN_COLUMNS.syncedAt, 'timestamptz'],
    ];
    if (existing.size === 0) {
      const key = spec.columns.slice(0, spec.keyCount).map((c) => quoteIdent(c.column));
      await trx.raw(
        `create table ${q} (\n  ${columns.map(([c, t]) => `${quoteIdent(c)} ${t}`).join(',\n  ')},\n  primary key (${key.join(', ')})\n)`,
      );
    } else {
      for (const [c, t] of columns) if (!existing.has(c)) await trx.raw(`alter table ${q} add column ${quoteIdent(c)} ${t}`);
    }
    const comments = new Map<string, string>([
      ...spec.columns.map((c) => [c.column, c.comment] as [string, string]),
      [DIRECTORY_OWN_COLUMNS.raw, 'the entry exactly as the platform sent it (JSON)'],
      [DIRECTORY_OWN_COLUMNS.syncedAt, 'when listsync last wrote this row'],
    ]);
    await syncComments(trx, schema, table, `listsync mirror of the platform's ${spec.what}; read whole on every run.`, comments);
  });
}

export interface DirectorySyncResult {
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
  /** Entries without a usable key: not written. */
  invalid: number;
}

/**
 * Makes the table hold exactly `entries` (rows with a key only): inserts the
 * new, rewrites those whose `_raw` changed, deletes those not listed. One
 * transaction, set-based.
 */
export async function replaceDirectoryRows(
  db: Knex | Knex.Transaction,
  schema: string,
  table: string,
  spec: DirectoryTableSpec,
  entries: readonly Record<string, unknown>[],
): Promise<DirectorySyncResult> {
  const q = qualifiedName(schema, table);
  const cols = spec.columns.map((c) => c.column);
  const keyCols = cols.slice(0, spec.keyCount);
  const values = cols.map(() => [] as (string | null)[]);
  const raws: string[] = [];
  const seen = new Set<string>();
  let invalid = 0;
  for (const e of entries) {
    const row = spec.columns.map((c) => textOf(firstKey(e, c.keys)));
    const key = row.slice(0, spec.keyCount);
    if (key.some((k) => k === null)) {
      invalid++;
      continue;
    }
    const k = JSON.stringify(key);
    if (seen.has(k)) continue;
    seen.add(k);
    row.forEach((v, i) => values[i]!.push(v));
    const raw = Object.fromEntries(Object.entries(e).filter(([name]) => !name.startsWith('_')));
    raws.push(storableJson(raw));
  }
  const qc = (c: string): string => quoteIdent(c);
  const keyMatch = keyCols.map((c) => `t.${qc(c)} = s.${qc(c)}`).join(' and ');
  const sql = `
with s as (
  select * from unnest(${cols.map(() => '?::text[]').join(', ')}, ?::jsonb[]) as s(${[...cols, '_raw'].map(qc).join(', ')})),
up as (
  insert into ${q} as t (${[...cols, '_raw', '_synced_at'].map(qc).join(', ')})
  select ${cols.map((c) => `s.${qc(c)}`).join(', ')}, s._raw, now() from s
  on conflict (${keyCols.map(qc).join(', ')}) do update set ${[...cols.slice(spec.keyCount), '_raw', '_synced_at'].map((c) => `${qc(c)} = excluded.${qc(c)}`).join(', ')}
   where t._raw is distinct from excluded._raw
  returning (t.xmax = 0) as inserted),
gone as (
  delete from ${q} t where not exists (select 1 from s where ${keyMatch}) returning 1)
select (select count(*) from up where inserted)::int as inserted, (select count(*) from up where not inserted)::int as updated, (select count(*) from gone)::int as deleted`;
  const res = (await db.raw(sql, [...values.map(arrayLiteral), arrayLiteral(raws)])) as {
    rows: { inserted: number; updated: number; deleted: number }[];
  };
  const r = res.rows[0]!;
  return { inserted: r.inserted, updated: r.updated, deleted: r.deleted, unchanged: seen.size - r.inserted - r.updated, invalid };
}

function firstKey(e: Record<string, unknown>, keys: readonly string[]): unknown {
  for (const k of keys) if (e[k] !== undefined && e[k] !== null && e[k] !== '') return e[k];
  return undefined;
}

function textOf(v: unknown): string | null {
  if (v === undefined || v === null || v === '') return null;
  const s = scalarString(v) ?? (typeof v === 'boolean' ? String(v) : JSON.stringify(v));
  return closestText(s);
}
