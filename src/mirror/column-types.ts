/**
 * Which Postgres column type a platform field maps to.
 *
 * `FieldType` is the storage type (Text, Datetime, Bit, Bigint, Decimal,
 * File...), `Type` the control (input, checkbox, datepicker, switch...). The
 * mapping is deliberately small: anything not recognised is text, which
 * never loses a value.
 */
import type { FieldMeta } from '../platform/types.js';

export type ColumnKind = 'text' | 'numeric' | 'boolean' | 'date' | 'timestamptz' | 'text[]' | 'jsonb';

export const COLUMN_KINDS: readonly ColumnKind[] = ['text', 'numeric', 'boolean', 'date', 'timestamptz', 'text[]', 'jsonb'];

/** The SQL type of each kind, as written in DDL and casts. */
export const SQL_TYPE: Readonly<Record<ColumnKind, string>> = {
  text: 'text',
  numeric: 'numeric',
  boolean: 'boolean',
  date: 'date',
  timestamptz: 'timestamptz',
  'text[]': 'text[]',
  jsonb: 'jsonb',
};

/** The SQL type of a kind (`timestamptz`, `text[]`...). */
export function columnSqlType(kind: ColumnKind): string {
  return SQL_TYPE[kind];
}

export function isColumnKind(value: unknown): value is ColumnKind {
  return typeof value === 'string' && (COLUMN_KINDS as readonly string[]).includes(value);
}

const NUMERIC_STORAGE = new Set(['bigint', 'int', 'integer', 'long', 'decimal', 'number', 'numeric', 'float', 'double', 'money', 'currency']);
const MULTI_VALUE_CONTROLS = new Set(['checkbox', 'multiselect', 'multi_select', 'multiple']);

/** The column kind for one field. Never throws: unknown pairs are text. */
export function columnKindFor(field: FieldMeta): ColumnKind {
  const storage = lower(field.FieldType);
  const control = lower(field.Type);
  if (MULTI_VALUE_CONTROLS.has(control)) return 'text[]';
  if (storage === 'datetime' || storage === 'date' || control === 'datepicker') {
    if (storage === 'date') return 'date';
    return dateFormatHasTime(parseRules(field.Rules)) ? 'timestamptz' : 'date';
  }
  if (storage === 'bit' || storage === 'bool' || storage === 'boolean' || control === 'switch') return 'boolean';
  if (NUMERIC_STORAGE.has(storage)) return 'numeric';
  if (storage === 'file' || control === 'upload') return 'jsonb';
  return 'text';
}

/**
 * `Rules` as an object, whether it came as an object or a JSON string;
 * `{}` for anything else (absent, malformed, an array...).
 */
export function parseRules(rules: unknown): Record<string, unknown> {
  let value = rules;
  if (typeof value === 'string') {
    const s = value.trim();
    if (!s) return {};
    try {
      value = JSON.parse(s);
    } catch {
      return {};
    }
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * True when a date field carries a time of day. A `DateFormat` without hours,
 * minutes or seconds (`yyyy-MM-dd`, `yyyy/MM/dd`) is a calendar date; a
 * missing format is taken as a date-time (the wider type).
 */
function dateFormatHasTime(rules: Record<string, unknown>): boolean {
  const key = Object.keys(rules).find((k) => k.toLowerCase() === 'dateformat');
  const format = key === undefined ? undefined : rules[key];
  if (typeof format !== 'string' || format.trim() === '') return true;
  return /[Hhms]/.test(format);
}

function lower(value: unknown): string {
  return typeof value === 'string' ? value.trim().toLowerCase() : '';
}
