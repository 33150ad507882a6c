/**
 * Pure: a row of the mirror as text, the way PostgreSQL reads it. Each item
 * becomes its values in column order (converted by the column's kind, `_raw`
 * as JSON with jsonb's key order), then either COPY's text format (new rows)
 * or one array literal per column (the insert and the update's bindings).
 */
import type { ColumnKind } from './column-types.js';
import { fromPlatformToSql, NOT_CONVERTED } from './convert.js';
import { arrayLiteral } from './pg-text.js';
import { RawJsonWriter } from './raw-json.js';
import { closestText, hasUnstorable, isStorable, storableValue } from '../storable.js';
import type { TableMapping } from './table-mapping.js';
import type { BatchRow, RowReport, UpsertFailure } from './upsert-rows.js';

/**
 * One row's values in the order of `FIXED_COLUMNS` id, row version, created,
 * modified, then the mapped columns, then `_raw`: SQL text, or null. The
 * mapped columns the item has no key for are listed in `missing` (by index),
 * unless the platform omits empty values.
 */
export function encodeRow(
  mapping: TableMapping,
  r: BatchRow,
  zone: string,
  writer: RawJsonWriter,
  report: RowReport,
  missing: number[],
): (string | null)[] {
  const fail = report.fail;
  const out: (string | null)[] = [
    r.id,
    r.versionText,
    instant(r, mapping.createdField, zone, fail),
    instant(r, mapping.modifiedField, zone, fail),
  ];
  // `_raw` first: a value with NUL or a lone surrogate is always escaped in JSON text, so an item
  // whose JSON has no backslash has no value that needs a closer look.
  const raw = rawJson(r, writer);
  const check = writer.lastHadBackslash;
  let unstorable = check && raw.escaped;
  const columns = mapping.columns;
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const value = r.item[c.field];
    if (value === undefined && !mapping.omitsEmptyValues && !Object.hasOwn(r.item, c.field)) missing.push(i);
    const v = fromPlatformToSql(c.kind, value, zone);
    if (v === NOT_CONVERTED) {
      fail({ id: r.id, field: c.field, raw: value });
      out.push(null);
    } else if (check && v !== null && !isStorable(v)) {
      unstorable = true;
      out.push(closestText(v));
    } else out.push(v);
  }
  if (unstorable) report.unstorable();
  if (missing.length > 0) report.missingKeys();
  out.push(raw.json);
  return out;
}

/** Encoded rows: their values (`encodeRow`) and whether each one's `_raw` may hold a backslash. */
export interface EncodedRows {
  readonly values: readonly (readonly (string | null)[] | undefined)[];
  readonly rawBackslashes: readonly boolean[];
}

/** The bindings shared by the insert and the update: one array per column, raw documents joined by U+001E. */
export function bindingsOf(mapping: TableMapping, encoded: readonly (readonly (string | null)[])[]): string[] {
  const column = (i: number): (string | null)[] => encoded.map((values) => values[i]!);
  const rawAt = 4 + mapping.columns.length;
  return [
    arrayLiteral(column(0)),
    arrayLiteral(column(1)),
    arrayLiteral(column(2)),
    arrayLiteral(column(3)),
    // JSON text has every control character escaped (RawJsonWriter does as JSON.stringify), so U+001E
    // never occurs inside a document: joining by it saves escaping ~0.5 MB per batch into an array literal.
    column(rawAt).join(RECORD_SEPARATOR),
    ...mapping.columns.map((_c, i) => arrayLiteral(column(4 + i))),
  ];
}

/** COPY text of rows [start, end), each ending with `_synced_at`. */
export function copyLines(copyEscapes: readonly boolean[], encoded: EncodedRows, [start, end]: [number, number], synced: string): string {
  const last = copyEscapes.length - 1;
  let text = '';
  for (let r = start; r < end; r++) {
    const values = encoded.values[r]!;
    // Every value of a row comes from the item's strings, numbers and booleans, and its JSON text
    // (`_raw`) has a backslash for every backslash, tab, line break and quote in any of its strings:
    // a row whose `_raw` has none has nothing to escape. The encoder knows which rows those are
    // without scanning their text.
    const escapes = encoded.rawBackslashes[r]!;
    for (let i = 0; i < last; i++) {
      const v = values[i]!;
      text += `${v === null ? '\\N' : escapes && copyEscapes[i] ? copyField(v) : v}\t`;
    }
    const raw = values[last]!;
    text += `${escapes ? raw.replaceAll('\\', '\\\\') : raw}\t${synced}\n`;
  }
  return text;
}

/** Column kinds whose converted values are digits, signs, separators and `t`/`f` only. */
export const PLAIN_KINDS: ReadonlySet<ColumnKind> = new Set(['numeric', 'boolean', 'date', 'timestamptz']);

/** A value in COPY's text format: backslash, tab, newline and carriage return escaped; null as \N. */
export function copyField(v: string | null): string {
  if (v === null) return '\\N';
  return COPY_SPECIAL.test(v) ? v.replace(COPY_SPECIALS, (c) => COPY_ESCAPES[c]!) : v;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** Separates the `_raw` documents of a batch in one text parameter. */
const RECORD_SEPARATOR = '\u001e';

function instant(r: BatchRow, field: string, zone: string, fail: (f: UpsertFailure) => void): string | null {
  const raw = r.item[field];
  const v = fromPlatformToSql('timestamptz', raw, zone);
  if (v !== NOT_CONVERTED) return v;
  fail({ id: r.id, field, raw });
  return null;
}

/**
 * The item as JSON for `_raw`. Strings jsonb cannot hold (NUL, lone surrogates) are kept exactly,
 * escaped (src/storable.ts), and counted as unstorable.
 */
function rawJson(r: BatchRow, writer: RawJsonWriter): { json: string; escaped: boolean } {
  let json: string;
  try {
    json = writer.write(r.item);
  } catch {
    json = JSON.stringify(r.item, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  }
  // Without a backslash there is no escape jsonb could refuse, and no escape mark: JSON writes NUL,
  // lone surrogates and the mark (U+0010) as \u escapes.
  if (!writer.lastHadBackslash || !json.includes('\\u') || !hasUnstorable(r.item)) return { json, escaped: false };
  const storable = storableValue(r.item) as Record<string, unknown>;
  try {
    return { json: writer.write(storable), escaped: true };
  } catch {
    return { json: JSON.stringify(storable, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)), escaped: true };
  }
}
