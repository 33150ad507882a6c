/**
 * Field metadata as the platform describes it (`GET .../fields`): the storage
 * type (`FieldType`) and the control (`Type`), plus the system fields every
 * list carries.
 */

/** One entry of `GET /v1/lists/{appID}/{listID}/fields`. */
export interface FieldMeta {
  FieldID: string;
  FieldName: string;
  DisplayName: string;
  InternalName: string;
  Type: string;
  FieldType: string;
  DefaultValue: string;
  Rules: Record<string, unknown>;
  IsSort: boolean;
  IsIndex: boolean;
  IsSystem: boolean;
  IsUnique: boolean;
}

/** The FieldType/Type pairs a user-defined field may have. */
export const FIELD_TYPE_PAIRS = [
  'Text/input',
  'Text/textarea',
  'Text/radio',
  'Text/checkbox',
  'Text/lookup',
  'Text/hyperlink',
  'Text/flowstatus',
  'Text/select',
  'Text/richtext',
  'Datetime/datepicker',
  'Bit/switch',
  'Bigint/input_number',
  'Decimal/input_number',
  'Decimal/currency',
  'Decimal/percent',
  'File/file-upload',
  'File/upload',
] as const;

export const DATE_FORMAT = 'yyyy-MM-dd';
export const DATE_TIME_FORMAT = 'yyyy-MM-dd HH:mm:ss';

/** How the emulator compares and sorts a field's values. */
export type ValueKind = 'id' | 'version' | 'timestamp' | 'number' | 'date' | 'datetime' | 'text';

export const SYSTEM_FIELD_NAMES = ['ListDataID', 'RowVersion', 'Title', 'Created', 'Modified', 'CreatedBy', 'ModifiedBy'] as const;

/** System fields a client may not write (Title is the only writable one). */
export const READ_ONLY_FIELDS: ReadonlySet<string> = new Set([
  'ListDataID',
  'RowVersion',
  'Created',
  'Modified',
  'CreatedBy',
  'ModifiedBy',
]);

export function isDateTimeRules(rules: Record<string, unknown>): boolean {
  const f = rules['DateFormat'];
  return typeof f === 'string' && /[Hh]/.test(f);
}

export function valueKindOf(meta: Pick<FieldMeta, 'FieldName' | 'FieldType' | 'Type' | 'Rules' | 'IsSystem'>): ValueKind {
  if (meta.IsSystem) {
    if (meta.FieldName === 'ListDataID') return 'id';
    if (meta.FieldName === 'RowVersion') return 'version';
    if (meta.FieldName === 'Created' || meta.FieldName === 'Modified') return 'timestamp';
  }
  switch (meta.FieldType) {
    case 'Bigint':
    case 'Decimal':
      return 'number';
    case 'Datetime':
      return isDateTimeRules(meta.Rules) ? 'datetime' : 'date';
    default:
      return 'text';
  }
}

/** A deterministic GUID-shaped FieldID. */
export function fieldIdFor(appID: string, listID: string, fieldName: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  const s = `${appID}/${listID}/${fieldName}`;
  for (let i = 0; i < s.length; i++) {
    h1 = Math.imul(h1 ^ s.charCodeAt(i), 0x01000193);
    h2 = Math.imul(h2 ^ s.charCodeAt(i), 0x5bd1e995);
  }
  const hex = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');
  const a = hex(h1);
  const b = hex(h2);
  const c = hex(h1 ^ h2);
  return `${a}-${b.slice(0, 4)}-4${b.slice(5, 8)}-8${c.slice(1, 4)}-${c.slice(4, 8)}${a.slice(0, 4)}${b.slice(0, 4)}`;
}

export interface FieldSpec {
  FieldName: string;
  Type: string;
  FieldType: string;
  DisplayName?: string;
  IsIndex?: boolean;
  IsUnique?: boolean;
  DefaultValue?: string;
  Rules?: Record<string, unknown>;
}

/** Full metadata for a user-defined field. */
export function userFieldMeta(appID: string, listID: string, spec: FieldSpec): FieldMeta {
  const rules: Record<string, unknown> = { ...(spec.Rules ?? {}) };
  if (spec.FieldType === 'Datetime' && typeof rules['DateFormat'] !== 'string') rules['DateFormat'] = DATE_TIME_FORMAT;
  const indexed = spec.IsIndex ?? false;
  return {
    FieldID: fieldIdFor(appID, listID, spec.FieldName),
    FieldName: spec.FieldName,
    DisplayName: spec.DisplayName ?? spec.FieldName,
    InternalName: spec.FieldName,
    Type: spec.Type,
    FieldType: spec.FieldType,
    DefaultValue: spec.DefaultValue ?? '',
    Rules: rules,
    IsSort: indexed,
    IsIndex: indexed,
    IsSystem: false,
    IsUnique: spec.IsUnique ?? false,
  };
}

/** The system fields, in output order; `title` overrides Title's display name. */
export function systemFieldMetas(
  appID: string,
  listID: string,
  titleDisplayName = 'Title',
): { leading: FieldMeta[]; trailing: FieldMeta[] } {
  const sys = (
    FieldName: string,
    FieldType: string,
    Type: string,
    indexed: boolean,
    DisplayName: string,
    rules: Record<string, unknown> = {},
    unique = false,
  ): FieldMeta => ({
    FieldID: fieldIdFor(appID, listID, FieldName),
    FieldName,
    DisplayName,
    InternalName: FieldName,
    Type,
    FieldType,
    DefaultValue: '',
    Rules: rules,
    IsSort: indexed,
    IsIndex: indexed,
    IsSystem: true,
    IsUnique: unique,
  });
  return {
    leading: [
      sys('ListDataID', 'Bigint', 'id', true, 'ID', {}, true),
      sys('RowVersion', 'Bigint', 'version', false, 'Row version'),
      sys('Title', 'Text', 'input', true, titleDisplayName),
    ],
    trailing: [
      sys('Created', 'Datetime', 'datepicker', true, 'Created', { DateFormat: DATE_TIME_FORMAT }),
      sys('Modified', 'Datetime', 'datepicker', true, 'Modified', { DateFormat: DATE_TIME_FORMAT }),
      sys('CreatedBy', 'Text', 'lookup', false, 'Created by'),
      sys('ModifiedBy', 'Text', 'lookup', false, 'Modified by'),
    ],
  };
}
