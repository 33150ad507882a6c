/**
 * Which Postgres column type a platform field maps to.
 *
 * A field has a storage kind (Text, Bigint, Decimal, Datetime, Bit, File...)
 * and a control (input, radio, checkbox, datepicker, switch, input_number...).
 * Platforms put them in different keys: exports have `FieldType` = storage and
 * `Type` = control; the REST answer most likely has only `Type` = control;
 * others have `Type` = storage, or the two swapped. So the storage kind is
 * taken from whichever of `FieldType` and `Type` holds one, else from the
 * field name's slot prefix (`Bigint2`, `Decimal1`, `Datetime3`, `Bit1`), else
 * from what the control implies (`input_number` → numeric, `switch` →
 * boolean, `datepicker` → date/time). Multi-value controls (checkbox,
 * multi-select, multi lookups) are text[] and file uploads jsonb whatever
 * their storage. Anything not recognised is text, which never loses a value.
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

/** Storage kinds as the platform names them (lower-cased), by the column kind they give. */
const STORAGE_KINDS: Readonly<Record<string, 'text' | 'numeric' | 'datetime' | 'date' | 'boolean' | 'file'>> = {
  text: 'text',
  string: 'text',
  varchar: 'text',
  ntext: 'text',
  guid: 'text',
  bigint: 'numeric',
  int: 'numeric',
  integer: 'numeric',
  long: 'numeric',
  decimal: 'numeric',
  number: 'numeric',
  numeric: 'numeric',
  float: 'numeric',
  double: 'numeric',
  money: 'numeric',
  datetime: 'datetime',
  date: 'date',
  bit: 'boolean',
  bool: 'boolean',
  boolean: 'boolean',
  file: 'file',
};

/** What a control implies about storage when nothing else says. */
const CONTROL_STORAGE: Readonly<Record<string, string>> = {
  input_number: 'Decimal',
  number: 'Decimal',
  currency: 'Decimal',
  percent: 'Decimal',
  rate: 'Decimal',
  switch: 'Bit',
  datepicker: 'Datetime',
  time: 'Datetime',
  metadata: 'Bigint',
  'file-upload': 'File',
  upload: 'File',
  attachment: 'File',
};

const MULTI_VALUE_CONTROLS = new Set([
  'checkbox',
  'multiselect',
  'multi-select',
  'multi_select',
  'multiple',
  'multi-lookup',
  'multilookup',
]);
const FILE_CONTROLS = new Set(['file-upload', 'upload', 'fileupload', 'file_upload', 'attachment', 'attachments', 'image-upload']);

/** Where a field's column type came from (`lists[].columns`: a type pinned in the config). */
export type KindSource = 'FieldType' | 'Type' | 'field name' | 'control' | 'default' | 'lists[].columns';

export interface FieldShape {
  /** Storage kind as the platform spells it (`Text`, `Bigint`...), or '' when unknown. */
  storage: string;
  /** The control (`input`, `datepicker`...), or '' when none was given. */
  control: string;
  kind: ColumnKind;
  /** Which key (or rule) decided the storage kind. */
  source: KindSource;
}

/** The storage kind, control and column kind of one field. Never throws: unknown shapes are text. */
export function describeField(field: FieldMeta): FieldShape {
  const fieldType = trimmed(field.FieldType);
  const type = trimmed(field.Type);
  let storage = '';
  let source: KindSource = 'default';
  let control = '';
  if (isStorageKind(fieldType)) {
    [storage, source, control] = [fieldType, 'FieldType', type];
  } else if (isStorageKind(type)) {
    [storage, source, control] = [type, 'Type', fieldType];
  } else {
    control = type || fieldType;
    const slot = slotPrefix(field.FieldName);
    if (slot !== undefined) [storage, source] = [slot, 'field name'];
    else if (CONTROL_STORAGE[control.toLowerCase()] !== undefined) [storage, source] = [CONTROL_STORAGE[control.toLowerCase()]!, 'control'];
  }
  return { storage, control, kind: kindOf(storage, control, field), source };
}

/** The column kind for one field. Never throws: unknown pairs are text. */
export function columnKindFor(field: FieldMeta): ColumnKind {
  return describeField(field).kind;
}

function kindOf(storage: string, control: string, field: FieldMeta): ColumnKind {
  const c = control.toLowerCase();
  if (MULTI_VALUE_CONTROLS.has(c) || (isLookup(c) && isMultiple(parseRules(field.Rules)))) return 'text[]';
  if (FILE_CONTROLS.has(c)) return 'jsonb';
  switch (STORAGE_KINDS[storage.toLowerCase()]) {
    case 'numeric':
      return 'numeric';
    case 'boolean':
      return 'boolean';
    case 'date':
      return 'date';
    case 'datetime':
      return dateFormatHasTime(parseRules(field.Rules)) ? 'timestamptz' : 'date';
    case 'file':
      return 'jsonb';
    default:
      return 'text';
  }
}

function isStorageKind(s: string): boolean {
  return s !== '' && STORAGE_KINDS[s.toLowerCase()] !== undefined;
}

/**
 * The storage kind of a slot name: `Bigint2` → `Bigint`, `Decimal1` →
 * `Decimal`, `Text12` → `Text`. System names (`Title`, `Created`) have no slot.
 */
export function slotPrefix(fieldName: string): string | undefined {
  const m = /^([A-Za-z]+)\d+$/.exec(fieldName);
  if (!m) return undefined;
  const prefix = m[1]!;
  return isStorageKind(prefix) ? prefix : undefined;
}

function isLookup(control: string): boolean {
  return control === 'lookup' || control === 'identity-picker' || control === 'select' || control === 'user';
}

function isMultiple(rules: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(rules)) {
    if (/^(is)?(multi|multiple|multiselect|allowmultiple|ismultiple|multiplechoice)$/i.test(k))
      return v === true || v === 1 || v === '1' || v === 'true';
  }
  return false;
}

function trimmed(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
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
