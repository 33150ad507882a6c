/**
 * Column names for platform fields, and identifier quoting.
 *
 * A column is named for people: the field's display name ("Order No.") in
 * lower snake_case (`order_no`), falling back to the field name (`Text1`);
 * letters and digits of any script are kept, everything else becomes `_`; at
 * most 63 bytes, never a column listsync adds to any table or view it makes
 * (`RESERVED_COLUMNS`) and never a Postgres system column; collisions get deterministic numeric suffixes; a name pinned in the
 * config wins. Once assigned, a field's column is persisted (in
 * `listsync.lists.fields`, keyed by the field name, which never changes) and
 * reused, so a field renamed on the platform keeps its column. Identifiers
 * always reach SQL through `quoteIdent`.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { RESERVED_COLUMNS } from './own-columns.js';

/** Postgres truncates identifiers longer than this many bytes. */
export const MAX_IDENTIFIER_BYTES = 63;

/** Every column listsync adds to a table or view it makes (src/mirror/own-columns.ts): no field may take these names. */
export { RESERVED_COLUMNS };

/** Postgres system columns: a user column with one of these names cannot be created. */
const SYSTEM_COLUMNS = ['oid', 'tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid'];

const TAKEN_ALWAYS = new Set([...RESERVED_COLUMNS, ...SYSTEM_COLUMNS]);

/**
 * The preferred column name for a display or field name, before collision
 * handling: `Order No.` → `order_no`, `OrderDate` → `order_date`, `Text1` →
 * `text1`, `HTTPCode` → `http_code`, `Größe` → `größe`. A name with no
 * letters or digits becomes `f_<hash>`; one starting with a digit gets an
 * `f_` prefix.
 */
export function baseColumnName(name: string): string {
  let s = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '_')
    .replace(/^_+|_+$/g, '');
  if (s === '') return `f_${shortHash(name)}`;
  if (/^\p{N}/u.test(s)) s = `f_${s}`;
  return truncate(s, MAX_IDENTIFIER_BYTES);
}

/** How a list's columns are named: from display names (default) or from field names. */
export type ColumnNaming = 'display' | 'field';

/** The name a field's column would take before collisions: its display name, else its field name. */
export function preferredColumnName(
  field: { FieldName: string; DisplayName?: string | undefined },
  naming: ColumnNaming = 'display',
): string {
  const display = typeof field.DisplayName === 'string' ? field.DisplayName.trim() : '';
  if (naming === 'display' && /[\p{L}\p{N}]/u.test(display)) return baseColumnName(display);
  return baseColumnName(field.FieldName);
}

/** A field to name: its field name and the name it would like (`preferredColumnName`). */
export interface ColumnRequest {
  field: string;
  name: string;
}

/**
 * Assigns a column to every field. A plain string is a field name that wants
 * its own snake-cased name. `pinned` (field → column, from the config) wins;
 * then `existing` (field → column, from the registry) is kept as is; new
 * fields are named in field-name order so the result does not depend on the
 * order the platform lists them in. Throws when a pinned name is held by
 * another field's existing column.
 */
export function assignColumnNames(
  requests: readonly (string | ColumnRequest)[],
  existing: ReadonlyMap<string, string> = new Map(),
  pinned: ReadonlyMap<string, string> = new Map(),
): Map<string, string> {
  const wanted = new Map<string, string>();
  for (const r of requests) {
    const req = typeof r === 'string' ? { field: r, name: baseColumnName(r) } : r;
    if (!wanted.has(req.field)) wanted.set(req.field, req.name);
  }
  const result = new Map<string, string>();
  const used = new Set<string>(TAKEN_ALWAYS);
  for (const [field, column] of pinned) {
    if (!wanted.has(field)) continue;
    result.set(field, column);
    used.add(column);
  }
  for (const [field, column] of existing) {
    if (result.has(field)) continue;
    if (used.has(column) && [...pinned].some(([f, c]) => c === column && f !== field && wanted.has(f))) {
      throw new ConfigError(
        `column "${column}" is pinned (lists[].columns) for another field but holds field ${field}; pin ${field} to another name too`,
        'lists[].columns',
      );
    }
    result.set(field, column);
    used.add(column);
  }
  const fresh = [...wanted.keys()].filter((f) => !result.has(f)).sort(compareCodePoints);
  for (const field of fresh) {
    const column = freeColumnName(wanted.get(field)!, (c) => used.has(c));
    used.add(column);
    result.set(field, column);
  }
  return result;
}

/**
 * `base`, or `base_2`, `base_3`... (cut to fit 63 bytes): the first that is
 * not taken and not reserved (`RESERVED_COLUMNS`, Postgres system columns).
 */
export function freeColumnName(base: string, taken: (column: string) => boolean): string {
  let column = truncate(base, MAX_IDENTIFIER_BYTES);
  for (let n = 2; taken(column) || TAKEN_ALWAYS.has(column); n++) column = withSuffix(base, `_${n}`);
  return column;
}

/** Whether a column name is one listsync adds itself somewhere (or a Postgres system column). */
export function isReservedColumn(column: string): boolean {
  return TAKEN_ALWAYS.has(column);
}

/** `name` + `suffix` in at most 63 bytes: `name` is cut (at a character boundary) to make room. */
export function withSuffix(name: string, suffix: string): string {
  return truncate(name, MAX_IDENTIFIER_BYTES - Buffer.byteLength(suffix, 'utf8')) + suffix;
}

/** A double-quoted SQL identifier: `a"b` → `"a""b"`. Refuses what cannot be an identifier. */
export function quoteIdent(name: string): string {
  assertIdentifier(name);
  return `"${name.replace(/"/g, '""')}"`;
}

/** `"schema"."table"` */
export function qualifiedName(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

/**
 * A single-quoted SQL string literal (standard_conforming_strings, the default
 * since 9.1) for statements run through `knex.raw`: `?` is written as `\?`,
 * which knex turns back into `?` instead of reading a binding placeholder.
 */
export function quoteLiteral(value: string): string {
  if (value.includes('\0')) throw new TypeError('a SQL literal cannot contain a NUL character');
  return `'${value.replace(/'/g, "''").replace(/\?/g, '\\?')}'`;
}

/**
 * Throws unless `name` is usable as an identifier in statements listsync
 * builds: non-empty, at most 63 bytes, no NUL, and no `?` (knex would read it
 * as a binding placeholder).
 */
export function assertIdentifier(name: string): void {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError('an SQL identifier cannot be empty');
  if (Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES)
    throw new TypeError(
      `SQL identifier "${name}" is longer than ${MAX_IDENTIFIER_BYTES} bytes; Postgres would truncate it. Choose a shorter name.`,
    );
  if (/[\0?]/.test(name))
    throw new TypeError(`SQL identifier ${JSON.stringify(name)} contains a NUL or "?"; choose a name of letters, digits and _.`);
}

/**
 * An index (or other schema-scoped object) name `<table>_<suffix>` that fits
 * in 63 bytes: long table names are cut and get a hash so two tables never
 * share a name.
 */
export function objectName(table: string, suffix: string): string {
  const full = `${table}_${suffix}`;
  if (Buffer.byteLength(full, 'utf8') <= MAX_IDENTIFIER_BYTES) return full;
  const tail = `_${shortHash(table)}_${suffix}`;
  return truncate(table, MAX_IDENTIFIER_BYTES - Buffer.byteLength(tail, 'utf8')) + tail;
}

function truncate(s: string, maxBytes: number): string {
  if (Buffer.byteLength(s, 'utf8') <= maxBytes) return s;
  let out = '';
  for (const ch of s) {
    if (Buffer.byteLength(out + ch, 'utf8') > maxBytes) break;
    out += ch;
  }
  return out;
}

function shortHash(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex').slice(0, 8);
}

function compareCodePoints(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
