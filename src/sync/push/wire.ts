/**
 * What a push sends for a change: its columns as the platform's field strings.
 * Pure: no I/O.
 *
 * - Each column becomes its field's platform string (src/mirror/convert.ts);
 *   a jsonb value goes as the exact JSON text PostgreSQL holds (numbers as
 *   written), compacted the way JSON.stringify writes it
 *   (test/sync/exact-values.test.ts).
 * - A multi-value (text[]) column takes the form of the elements the item
 *   held (`_raw`): an element kept is sent as the platform sent it, a number
 *   stays a number (src/mirror/multi-value.ts; test/sync/push-decisions.test.ts).
 * - Columns of fields removed from the platform are split off: the rest of
 *   the edit is sent, the removed part is kept, failed, with
 *   `removedFieldsError` (test/sync/write-back.test.ts).
 */
import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { coerceError } from '../../errors.js';
import { toPlatform } from '../../mirror/convert.js';
import type { TableMapping } from '../../mirror/table-mapping.js';
import { multiValueWire } from '../../mirror/multi-value.js';

/**
 * Column values of a change -> the platform's field strings. `held`: the item
 * as the mirror last read it (`_raw`), whose multi-value arrays give the form
 * of their elements (src/mirror/multi-value.ts).
 */
export function toWire(
  mapping: TableMapping,
  changes: Record<string, unknown>,
  zone: string,
  held?: Record<string, unknown> | null,
  exactJson: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [column, value] of Object.entries(changes)) {
    const col = mapping.byColumn(column);
    if (!col) throw new Error(`column ${column} is not a field column of ${mapping.schema}.${mapping.table}`);
    if (col.removed) throw new Error(`field ${col.field} (column ${column}) is no longer on the platform`);
    try {
      const exact = col.kind === 'jsonb' && typeof value === 'object' && value !== null ? exactJson[column] : undefined;
      const wire = exact !== undefined ? compactJson(exact) : toPlatform(col.kind, value, zone);
      data[col.field] = col.kind === 'text[]' && wire !== '' ? multiValueWire(JSON.parse(wire) as string[], held?.[col.field]) : wire;
    } catch (err) {
      throw new Error(`column ${column}: ${coerceError(err).message}`, { cause: err });
    }
  }
  return data;
}

/** `toWire`, or the error a change that cannot be converted fails with. */
export function wireOrError(
  mapping: TableMapping,
  changes: Record<string, unknown>,
  zone: string,
  held?: Record<string, unknown> | null,
  exactJson?: Readonly<Record<string, string>>,
): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  try {
    return { ok: true, value: toWire(mapping, changes, zone, held, exactJson) };
  } catch (err) {
    return { ok: false, error: `cannot convert the change for the platform: ${coerceError(err).message}` };
  }
}

/** JSON text as JSON.stringify writes it (no spaces), every number as written. */
export function compactJson(text: string): string {
  return stringifyLossless(parseLossless(text)) ?? text;
}

/** An edit's columns split into those of fields the platform still has and those of removed fields. */
export function splitRemoved(
  mapping: TableMapping,
  changes: Record<string, unknown>,
): { sendable: Record<string, unknown>; removed: Record<string, unknown> } {
  const sendable: Record<string, unknown> = {};
  const removed: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(changes)) {
    if (mapping.byColumn(column)?.removed) removed[column] = value;
    else sendable[column] = value;
  }
  return { sendable, removed };
}

/** The failure kept on the part of an edit that names removed fields. */
export function removedFieldsError(mapping: TableMapping, removed: Record<string, unknown>): string {
  return `not sent: ${removedFieldsPhrase(mapping, Object.keys(removed))}; the rest of the change, if any, was applied`;
}

/** "notes (field Text4) belongs to a field that was removed from the platform", for one or more columns. */
export function removedFieldsPhrase(mapping: TableMapping, columns: readonly string[]): string {
  const names = columns.map((c) => `${c} (field ${mapping.byColumn(c)?.field ?? '?'})`);
  return `${names.join(', ')} ${names.length === 1 ? 'belongs to a field that was' : 'belong to fields that were'} removed from the platform`;
}

/** The fields a write can change (read-only ones, ModifiedBy among them, move by themselves). */
export const writableFields = (mapping: TableMapping): string[] => mapping.columns.filter((c) => !c.readOnly).map((c) => c.field);

/** The jsonb columns, whose exact JSON text is read from the outbox before a send. */
export const jsonbColumns = (mapping: TableMapping): string[] => mapping.columns.filter((c) => c.kind === 'jsonb').map((c) => c.column);
