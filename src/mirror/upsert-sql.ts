/**
 * Pure: the statements of a batch, as text, built once per mapping. Lookups
 * are LATERAL subqueries with OFFSET 0 or scalar subqueries: executed per row
 * through an index, whatever the planner's statistics say (a fresh,
 * unanalysed table must never turn into a hash join over the whole table).
 * Every identifier from the platform is quoted (`quoteIdent`).
 */
import type { ColumnKind } from './column-types.js';
import { historyStatement } from './history.js';
import { qualifiedName, quoteIdent, quoteLiteral } from './naming.js';
import { arrayLiteral } from './pg-text.js';
import { PLAIN_KINDS } from './row-encoding.js';
import { escapeStorable } from '../storable.js';
import { openChangeExists, openChangeLookup } from '../store/outbox-sql.js';
import { FIXED_COLUMNS, type TableMapping } from './table-mapping.js';

export interface Statements {
  /** Bindings: ids, list name. */
  read: string;
  /** COPY of new rows, every written column in the order of `encodeRow`, then `_synced_at`. */
  copy: string;
  /**
   * Per value of `encodeRow`: whether it may hold what COPY treats specially.
   * Versions, numbers, booleans, dates and times are written by the
   * converters in formats that never do.
   */
  copyEscapes: boolean[];
  /** Bindings: the encoded rows. */
  insert: string;
  /** Bindings: the encoded rows, list name. */
  update: string;
  /**
   * The update for a batch where items omit keys of mapped columns: those columns, and those keys
   * of `_raw`, keep what they hold. Bindings: the encoded rows, the missing column indexes and
   * field names per row, list name.
   */
  updateKeeping: string;
  /** With history only (insert and update then return the ids they wrote). Bindings: those ids. */
  history?: string;
}

const statementCache = new WeakMap<TableMapping, Statements>();

/** The statements of a batch for `mapping` (cached while the mapping lives). */
export function statementsFor(mapping: TableMapping): Statements {
  const cached = statementCache.get(mapping);
  if (cached) return cached;
  const t = qualifiedName(mapping.schema, mapping.table);
  const q = quoteIdent;
  const F = FIXED_COLUMNS;
  const paramCast = (kind: ColumnKind): string => (kind === 'text[]' ? 'text[]' : kind === 'jsonb' ? 'jsonb[]' : `${kind}[]`);
  const valueExpr = (kind: ColumnKind, alias: string): string => (kind === 'text[]' ? `s.${alias}::text[]` : `s.${alias}`);
  const aliases = mapping.columns.map((_c, i) => `c${i}`);
  const unnestOf = (extra: readonly string[]): string =>
    `unnest(${[
      '?::text[]',
      '?::bigint[]',
      '?::timestamptz[]',
      '?::timestamptz[]',
      'string_to_array(?::text, chr(30))',
      ...mapping.columns.map((c) => `?::${paramCast(c.kind)}`),
      ...extra.map(() => '?::text[]'),
    ].join(', ')}) as s(${['id', 'row_version', 'created_at', 'modified_at', 'raw', ...aliases, ...extra].join(', ')})`;
  const unnest = unnestOf([]);

  const read = readStatement(t);

  const target = [
    F.id,
    F.rowVersion,
    F.createdAt,
    F.modifiedAt,
    ...mapping.columns.map((c) => c.column),
    F.raw,
    F.syncedAt,
    F.deletedAt,
  ].map(q);
  const values = [
    's.id',
    's.row_version',
    's.created_at',
    's.modified_at',
    ...mapping.columns.map((c, i) => valueExpr(c.kind, aliases[i]!)),
    's.raw::jsonb',
    'now()',
    'null::timestamptz',
  ];
  const returning = mapping.history ? `\nreturning ${q(F.id)} as id` : '';
  const insert = `
insert into ${t} (${target.join(', ')})
select ${values.join(', ')}
  from ${unnest}
on conflict (${q(F.id)}) do nothing${returning}`;

  // A rewritten row keeps the `_raw` keys of removed and retired fields (the item no longer has them;
  // they are the raw values of columns kept with their data), and those of keys the item omits.
  const rawAt = 4 + mapping.columns.length;
  const kept = mapping.keptRawKeys ?? [];
  const keptRaw = kept.length === 0 ? '' : `${rawSubset(`${quoteLiteral(arrayLiteral(kept.map(escapeStorable)))}::text[]`)} || `;
  const updateOf = (keeping: boolean): string => {
    const sets = target.slice(1).map((col, i) => {
      const at = i + 1;
      let value = values[at]!;
      if (at === rawAt) value = `${keptRaw}${keeping ? `${rawSubset('s.missing_keys::text[]')} || ` : ''}${value}`;
      else if (keeping && at > 3 && at < rawAt)
        value = `case when ${at - 4} = any(s.missing_columns::int[]) then t.${col} else ${value} end`;
      return `${col} = ${value}`;
    });
    return `
update ${t} as t set ${sets.join(', ')}
  from ${keeping ? unnestOf(['missing_columns', 'missing_keys']) : unnest}
 where t.${q(F.id)} = s.id
   and ((t.${q(F.rowVersion)} is null and s.row_version is not null)
        or s.row_version > t.${q(F.rowVersion)}
        or t.${q(F.deletedAt)} is not null
        or (s.row_version is null and t.${q(F.raw)} is distinct from s.raw::jsonb))
   and ${openChangeExists(`t.${q(F.id)}`)} is null${mapping.history ? `\nreturning t.${q(F.id)} as id` : ''}`;
  };
  const update = updateOf(false);
  const updateKeeping = updateOf(true);

  const statements: Statements = {
    read,
    ...copyStatement(mapping, t),
    insert,
    update,
    updateKeeping,
    ...(mapping.history ? { history: historyStatement(mapping) } : {}),
  };
  statementCache.set(mapping, statements);
  return statements;
}

/** Per ID of a batch: whether the row is there, its version, whether it is deleted, and its open change. Bindings: the IDs. */
function readStatement(t: string): string {
  const q = quoteIdent;
  const F = FIXED_COLUMNS;
  return `
select s.id, c.id is not null as present, c.row_version, c.deleted, p.hit is not null as pending, p.base_version
  from unnest(?::text[]) as s(id)
  left join lateral (
    select cur.${q(F.id)} as id, cur.${q(F.rowVersion)} as row_version, cur.${q(F.deletedAt)} is not null as deleted
      from ${t} cur where cur.${q(F.id)} = s.id offset 0) c on true
  left join lateral (
    ${openChangeLookup('s.id')}) p on true`;
}

/** The COPY of a first load's rows, and which of its columns are escaped (see `Statements.copyEscapes`). */
function copyStatement(mapping: TableMapping, t: string): Pick<Statements, 'copy' | 'copyEscapes'> {
  const F = FIXED_COLUMNS;
  const columns = [F.id, F.rowVersion, F.createdAt, F.modifiedAt, ...mapping.columns.map((c) => c.column), F.raw, F.syncedAt];
  return {
    copy: `copy ${t} (${columns.map(quoteIdent).join(', ')}) from stdin`,
    copyEscapes: [true, false, false, false, ...mapping.columns.map((c) => !PLAIN_KINDS.has(c.kind)), true],
  };
}

/** The keys (a text[] expression) of the stored row's `_raw` that it has, as a jsonb object. */
function rawSubset(keys: string): string {
  const raw = `t.${quoteIdent(FIXED_COLUMNS.raw)}`;
  return `coalesce((select jsonb_object_agg(e.key, e.value) from jsonb_each(${raw}) e where e.key = any(${keys})), '{}'::jsonb)`;
}
