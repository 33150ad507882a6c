/**
 * `GET /lists/{appID}/{listID}/fields` answers, read tolerantly.
 *
 * The platform's layout of field metadata is not settled (see the README's
 * "What your mirror looks like"): `Data` may be the array of fields or an
 * object holding it (`Fields`, `Items`, `List`...), or an object keyed by
 * field name; keys may be PascalCase or camelCase; `FieldID` may be a string
 * or an integer; flags (`IsIndex`, `IsSystem`...) may be booleans, numbers or
 * strings; the storage kind may sit in `FieldType` or in `Type`, or nowhere.
 * `normalizeFields` turns any of these into `FieldMeta` with the canonical
 * keys, keeping everything else the entry carried.
 */
import type { FieldMeta } from './types.js';

/** Canonical key → the spellings accepted for it (compared case-insensitively). */
const KEY_ALIASES: Readonly<Record<string, readonly string[]>> = {
  FieldID: ['FieldID', 'FieldId', 'ID', 'Id'],
  FieldName: ['FieldName', 'Name', 'Field', 'Key'],
  DisplayName: ['DisplayName', 'Title', 'Label', 'Caption'],
  InternalName: ['InternalName'],
  Type: ['Type', 'ControlType', 'Control'],
  FieldType: ['FieldType', 'StorageType', 'DataType'],
  Rules: ['Rules', 'Rule', 'Settings'],
  DefaultValue: ['DefaultValue'],
  IsSort: ['IsSort', 'Sortable', 'IsSortable'],
  IsIndex: ['IsIndex', 'Indexed', 'IsIndexed'],
  IsSystem: ['IsSystem', 'System'],
  IsUnique: ['IsUnique', 'Unique'],
};

const FLAG_KEYS = new Set(['IsSort', 'IsIndex', 'IsSystem', 'IsUnique']);

/** Properties of an object-shaped `Data` that may hold the field array. */
const CONTAINER_KEYS = ['fields', 'items', 'list', 'data', 'rows', 'records', 'columns'];

/** A platform flag as a boolean: `true`, `1`, `"1"`, `"true"`, `"yes"`, `"Y"` are true. */
export function flag(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'bigint') return value !== 0n;
  if (typeof value === 'string') return /^(1|true|yes|y|t|on)$/i.test(value.trim());
  return false;
}

/**
 * The fields of a `/fields` answer's `Data`, with canonical keys. Entries with
 * no usable name are dropped; `undefined` when `Data` holds nothing that looks
 * like a field list.
 */
export function normalizeFields(data: unknown): FieldMeta[] | undefined {
  const entries = fieldEntries(data);
  if (entries === undefined) return undefined;
  const out: FieldMeta[] = [];
  for (const [key, entry] of entries) {
    const f = normalizeField(entry, key);
    if (f) out.push(f);
  }
  return out;
}

/** One field entry with canonical keys; undefined without a name. */
export function normalizeField(entry: unknown, keyName?: string): FieldMeta | undefined {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const src = entry as Record<string, unknown>;
  const byLower = new Map(Object.keys(src).map((k) => [k.toLowerCase(), k]));
  const out: Record<string, unknown> = {};
  const consumed = new Set<string>();
  for (const [canonical, aliases] of Object.entries(KEY_ALIASES)) {
    for (const alias of aliases) {
      const actual = byLower.get(alias.toLowerCase());
      if (actual === undefined || consumed.has(actual)) continue;
      const v = src[actual];
      if (v === undefined || v === null) continue;
      consumed.add(actual);
      out[canonical] = FLAG_KEYS.has(canonical) ? flag(v) : v;
      break;
    }
  }
  for (const [k, v] of Object.entries(src)) if (!consumed.has(k) && !(k in out)) out[k] = v;
  // Names are taken exactly as sent: "Text1" and "Text1 " are two fields (items carry both keys).
  let name = typeof out.FieldName === 'string' ? out.FieldName : typeof out.FieldName === 'number' ? String(out.FieldName) : '';
  if (name === '' && typeof out.InternalName === 'string') name = out.InternalName;
  if (name === '' && keyName !== undefined) name = keyName;
  if (name === '') return undefined;
  out.FieldName = name;
  if (out.FieldID !== undefined && typeof out.FieldID !== 'string') out.FieldID = String(out.FieldID as number);
  if (typeof out.DisplayName !== 'string') delete out.DisplayName;
  for (const k of ['Type', 'FieldType'] as const) if (out[k] !== undefined && typeof out[k] !== 'string') out[k] = String(out[k] as number);
  return out as FieldMeta;
}

function fieldEntries(data: unknown): [string | undefined, unknown][] | undefined {
  if (Array.isArray(data)) return data.map((e) => [undefined, e]);
  if (data === null || typeof data !== 'object') return undefined;
  const obj = data as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (CONTAINER_KEYS.includes(key.toLowerCase()) && Array.isArray(obj[key])) return (obj[key] as unknown[]).map((e) => [undefined, e]);
  }
  // Keyed by field name: every value an object.
  const values = Object.entries(obj);
  if (values.length > 0 && values.every(([, v]) => v !== null && typeof v === 'object' && !Array.isArray(v))) return values;
  return undefined;
}
