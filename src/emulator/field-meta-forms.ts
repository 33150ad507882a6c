import type { FieldMeta } from './field-types.js';

/**
 * How `GET .../fields` arranges a field's storage kind and control. The
 * emulator always knows both (queries compare by storage kind); what it
 * serves depends on the arrangement, because the real service's shape is not
 * settled (see shared/spec/platform-facts.md):
 *
 * - `exported`: `FieldType` = storage kind (Text, Bigint, Decimal, Datetime,
 *   Bit, File), `Type` = control (input, radio, datepicker, switch...), as in
 *   the vendor's list exports. The default, for backwards compatibility.
 * - `swapped`: the reverse (`FieldType` = control, `Type` = storage kind).
 * - `type-only`: `Type` = storage kind, no `FieldType` key, integer `FieldID`.
 * - `control-only`: `Type` = control, no `FieldType` key: the likeliest shape
 *   of the real REST answer. Like the connector definition's field list, it
 *   does not list `RowVersion` (items still carry it).
 *
 * The flags (IsSort, IsIndex, IsSystem, IsUnique) are booleans unless
 * `fieldFlags` asks for numbers (1/0) or strings ("true"/"false").
 */

export const FIELD_META_ARRANGEMENTS = ['exported', 'swapped', 'type-only', 'control-only'] as const;
export type FieldMetaArrangement = (typeof FIELD_META_ARRANGEMENTS)[number];
export const DEFAULT_FIELD_META: FieldMetaArrangement = 'exported';

export const FIELD_FLAG_STYLES = ['boolean', 'number', 'string'] as const;
export type FieldFlagStyle = (typeof FIELD_FLAG_STYLES)[number];

export interface FieldMetaShape {
  arrangement: FieldMetaArrangement;
  flags: FieldFlagStyle;
}

export const DEFAULT_FIELD_META_SHAPE: FieldMetaShape = { arrangement: DEFAULT_FIELD_META, flags: 'boolean' };

export function isFieldMetaArrangement(v: unknown): v is FieldMetaArrangement {
  return typeof v === 'string' && (FIELD_META_ARRANGEMENTS as readonly string[]).includes(v);
}

/** A deterministic positive 31-bit integer FieldID (for `type-only`), stable across restarts. */
export function integerFieldId(guid: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < guid.length; i++) h = Math.imul(h ^ guid.charCodeAt(i), 0x01000193);
  return ((h >>> 1) % 2_000_000_000) + 1;
}

function flag(value: boolean, style: FieldFlagStyle): boolean | number | string {
  if (style === 'number') return value ? 1 : 0;
  if (style === 'string') return value ? 'true' : 'false';
  return value;
}

/** One field as `GET .../fields` serves it under `shape`; key order follows the platform's. */
export function presentField(meta: FieldMeta, shape: FieldMetaShape): Record<string, unknown> {
  const { arrangement, flags } = shape;
  const out: Record<string, unknown> = {
    FieldID: arrangement === 'type-only' ? integerFieldId(meta.FieldID) : meta.FieldID,
    FieldName: meta.FieldName,
    DisplayName: meta.DisplayName,
    InternalName: meta.InternalName,
  };
  switch (arrangement) {
    case 'exported':
      out['Type'] = meta.Type;
      out['FieldType'] = meta.FieldType;
      break;
    case 'swapped':
      out['Type'] = meta.FieldType;
      out['FieldType'] = meta.Type;
      break;
    case 'type-only':
      out['Type'] = meta.FieldType;
      break;
    case 'control-only':
      out['Type'] = meta.Type;
      break;
  }
  out['DefaultValue'] = meta.DefaultValue;
  out['Rules'] = meta.Rules;
  out['IsSort'] = flag(meta.IsSort, flags);
  out['IsIndex'] = flag(meta.IsIndex, flags);
  out['IsSystem'] = flag(meta.IsSystem, flags);
  out['IsUnique'] = flag(meta.IsUnique, flags);
  return out;
}

export function presentFields(fields: readonly FieldMeta[], shape: FieldMetaShape): Array<Record<string, unknown>> {
  const listed = shape.arrangement === 'control-only' ? fields.filter((f) => f.FieldName !== 'RowVersion') : fields;
  return listed.map((f) => presentField(f, shape));
}
