/**
 * The list registry (`listsync.lists`): per list, its table, the field →
 * column mapping (`fields` jsonb) and a fingerprint of the field metadata.
 * The stored mapping is what keeps column names stable across runs.
 *
 * `fields` holds one entry per field ever seen, in the platform's order:
 * `{ field, column, kind, platformKind, fieldType, type, displayName?, indexed,
 * system, fixed, removed }`. Fixed entries map the id, version, created and
 * modified fields to their fixed columns.
 */
import type { Knex } from '../db.js';
import { selectRegistryRow, upsertRegistryRow } from '../store/registry.js';
import { isColumnKind, type ColumnKind, type KindSource } from './column-types.js';
import { readOnlyFromSystemFlag } from './read-only.js';
import { decodeStorable, escapeStorable, storableValue, unescapeStorable } from '../storable.js';
import { createTableMapping, FIXED_COLUMNS, type MappedColumn, type TableMapping } from './table-mapping.js';

export interface RegistryField {
  field: string;
  column: string;
  /** Kind of the column as it is (text after a widening). */
  kind: ColumnKind;
  /** Kind the platform's metadata asks for. */
  platformKind: ColumnKind;
  /** `FieldType` and `Type` as the platform sent them ('' when absent). */
  fieldType: string;
  type: string;
  /** The storage kind and control as `describeField` read them, and where the kind came from. */
  storage?: string;
  control?: string;
  kindSource?: KindSource;
  displayName?: string;
  indexed: boolean;
  system: boolean;
  /** The platform does not take writes of it (src/mirror/read-only.ts). */
  readOnly?: boolean;
  /** Maps to one of the fixed columns (id, row_version, created_at, modified_at). */
  fixed: boolean;
  /** No longer in the platform's field list; the column is kept. */
  removed: boolean;
  /** The platform's FieldID, as a string, when it sends one: with the field name, what tells one field from another. */
  fieldId?: string;
  /**
   * A removed field whose slot (`field`) the platform gave to another field: its column is kept under
   * its own name and never matched to that field name again.
   */
  retired?: boolean;
  /** For a retired field: the key of `_raw` its raw values were moved to (`<field>@<column>`). */
  rawKey?: string;
}

export interface RegistryEntry {
  name: string;
  appID: string;
  listID: string;
  table: string;
  fields: RegistryField[];
  fingerprint: string;
  /** Settings the typed columns were converted under; `timeZone` undefined for mirrors made before it was kept. */
  conversion: ConversionSettings;
  /** Keeps `<table>_history` (lists[].history). */
  history?: boolean;
  /** The list's title on the platform, when known. */
  title?: string;
}

export interface ConversionSettings {
  timeZone?: string;
  /** The platform leaves empty values out of items (`platform.omitsEmptyValues`): a missing key is NULL. */
  omitsEmptyValues?: boolean;
}

export async function readRegistry(
  db: Knex | Knex.Transaction,
  listName: string,
  options: { forUpdate?: boolean } = {},
): Promise<RegistryEntry | undefined> {
  const row = await selectRegistryRow(db, listName, options);
  if (!row) return undefined;
  return {
    name: row.name,
    appID: row.app_id,
    listID: row.list_id,
    table: row.table_name,
    fields: parseRegistryFields(decodeStorable(typeof row.fields === 'string' ? safeParse(row.fields) : row.fields)),
    fingerprint: row.fingerprint,
    conversion: parseConversion(row.conversion),
    history: row.history === true,
    ...(row.title !== null ? { title: unescapeStorable(row.title) } : {}),
  };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export async function writeRegistry(db: Knex | Knex.Transaction, entry: RegistryEntry): Promise<void> {
  await upsertRegistryRow(db, {
    name: entry.name,
    app_id: entry.appID,
    list_id: entry.listID,
    table_name: entry.table,
    // Display names and field names are the platform's strings: kept exactly, escaped where PostgreSQL cannot hold them.
    fields: JSON.stringify(storableValue(entry.fields)),
    fingerprint: entry.fingerprint,
    conversion: JSON.stringify(entry.conversion),
    history: entry.history ?? false,
    title: entry.title === undefined ? null : escapeStorable(entry.title),
  });
}

function parseConversion(value: unknown): ConversionSettings {
  const v = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  if (v === null || typeof v !== 'object') return {};
  const tz = (v as Record<string, unknown>).timeZone;
  const omits = (v as Record<string, unknown>).omitsEmptyValues === true;
  return { ...(typeof tz === 'string' ? { timeZone: tz } : {}), ...(omits ? { omitsEmptyValues: true } : {}) };
}

/** Tolerant: entries written by anything else (no string field/column) are skipped. */
export function parseRegistryFields(value: unknown): RegistryField[] {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(v)) return [];
  const out: RegistryField[] = [];
  for (const e of v as unknown[]) {
    if (e === null || typeof e !== 'object') continue;
    const r = e as Record<string, unknown>;
    if (typeof r.field !== 'string' || typeof r.column !== 'string' || r.column === '') continue;
    const kind = isColumnKind(r.kind) ? r.kind : 'text';
    out.push({
      field: r.field,
      column: r.column,
      kind,
      platformKind: isColumnKind(r.platformKind) ? r.platformKind : kind,
      fieldType: typeof r.fieldType === 'string' ? r.fieldType : '',
      type: typeof r.type === 'string' ? r.type : '',
      ...(typeof r.storage === 'string' ? { storage: r.storage } : {}),
      ...(typeof r.control === 'string' ? { control: r.control } : {}),
      ...(isKindSource(r.kindSource) ? { kindSource: r.kindSource } : {}),
      ...(typeof r.displayName === 'string' ? { displayName: r.displayName } : {}),
      indexed: r.indexed === true,
      system: r.system === true,
      ...(r.readOnly === true || (r.readOnly === undefined && readOnlyFromSystemFlag(String(r.field), r.system === true))
        ? { readOnly: true }
        : {}),
      fixed: r.fixed === true,
      removed: r.removed === true,
      ...(typeof r.fieldId === 'string' ? { fieldId: r.fieldId } : {}),
      ...(r.retired === true ? { retired: true } : {}),
      ...(typeof r.rawKey === 'string' ? { rawKey: r.rawKey } : {}),
    });
  }
  return out;
}

function isKindSource(v: unknown): v is KindSource {
  return v === 'FieldType' || v === 'Type' || v === 'field name' || v === 'control' || v === 'default' || v === 'lists[].columns';
}

/** A registry entry as a mapped column (read-only flag and display name kept for the capture's messages). */
export function mappedColumn(e: RegistryField): MappedColumn {
  return {
    field: e.field,
    column: e.column,
    kind: e.kind,
    ...(e.readOnly ? { readOnly: true } : {}),
    ...(e.displayName !== undefined ? { displayName: e.displayName } : {}),
  };
}

/**
 * The mapping of a registered list, read from the registry without touching
 * the table. Undefined when the list was never registered (run a pull first).
 */
export async function loadTableMapping(db: Knex | Knex.Transaction, schema: string, listName: string): Promise<TableMapping | undefined> {
  const entry = await readRegistry(db, listName);
  if (!entry) return undefined;
  const fixedField = (column: string, fallback: string): string =>
    entry.fields.find((f) => f.fixed && f.column === column)?.field ?? fallback;
  const fieldEntries = entry.fields.filter((f) => !f.fixed);
  return createTableMapping({
    schema,
    table: entry.table,
    listName: entry.name,
    idField: fixedField(FIXED_COLUMNS.id, 'ListDataID'),
    versionField: fixedField(FIXED_COLUMNS.rowVersion, 'RowVersion'),
    createdField: fixedField(FIXED_COLUMNS.createdAt, 'Created'),
    modifiedField: fixedField(FIXED_COLUMNS.modifiedAt, 'Modified'),
    columns: fieldEntries.filter((f) => !f.removed).map(mappedColumn),
    removedColumns: fieldEntries.filter((f) => f.removed).map(({ field, column, kind }) => ({ field, column, kind })),
    keptRawKeys: keptRawKeys(fieldEntries),
    ...(entry.conversion.omitsEmptyValues ? { omitsEmptyValues: true } : {}),
    changes: [],
    history: entry.history === true,
    fingerprint: entry.fingerprint,
  });
}

/**
 * The `_raw` keys a row rewritten from the platform carries over from what it held: those of removed
 * fields (items no longer have them; their columns keep the values) and those retired fields' values
 * were moved to.
 */
export function keptRawKeys(fields: readonly RegistryField[]): string[] {
  return fields.flatMap((f) => (f.retired ? (f.rawKey !== undefined ? [f.rawKey] : []) : f.removed ? [f.field] : []));
}
