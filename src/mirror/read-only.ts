/**
 * Fields the platform does not let one write: system fields (`IsSystem`),
 * auto-number and calculated fields, and whatever the metadata marks
 * read-only (`ReadOnly`, `IsReadOnly`, `Editable: false` as a key or in
 * `Rules`). A write naming one is answered success and the field keeps its
 * value, so their columns are read-only in the mirror: the capture refuses an
 * edit of one, naming the field (test/sync/not-taken.test.ts).
 *
 * `Title` is the exception: the platform lists it as a system field, and it is
 * the one system field a client writes.
 */
import type { FieldMeta } from '../platform/types.js';
import { parseRules } from './column-types.js';

const READ_ONLY_CONTROLS = new Set([
  'autonumber',
  'auto-number',
  'auto_number',
  'calculated-column',
  'calculated',
  'calculation',
  'formula',
]);

const WRITABLE_SYSTEM_FIELDS = new Set(['Title']);

const truthy = (v: unknown): boolean => v === true || v === 1 || v === '1' || (typeof v === 'string' && v.trim().toLowerCase() === 'true');
const falsy = (v: unknown): boolean => v === false || v === 0 || v === '0' || (typeof v === 'string' && v.trim().toLowerCase() === 'false');

/**
 * A registry entry written before read-only fields were recorded: its system
 * flag decides (Title excepted), so an older mirror refuses the same edits.
 */
export function readOnlyFromSystemFlag(field: string, system: boolean): boolean {
  return system && !WRITABLE_SYSTEM_FIELDS.has(field);
}

/** Whether a field's metadata says the platform keeps its own value whatever a write sends. */
export function isReadOnlyField(f: FieldMeta): boolean {
  const meta = f as unknown as Record<string, unknown>;
  if (truthy(meta['IsSystem']) && !WRITABLE_SYSTEM_FIELDS.has(f.FieldName)) return true;
  for (const key of ['Type', 'FieldType']) {
    const v = meta[key];
    if (typeof v === 'string' && READ_ONLY_CONTROLS.has(v.trim().toLowerCase())) return true;
  }
  const rules = parseRules(f.Rules);
  for (const source of [meta, rules]) {
    for (const [k, v] of Object.entries(source)) {
      const key = k.toLowerCase();
      if ((key === 'readonly' || key === 'isreadonly') && truthy(v)) return true;
      if ((key === 'editable' || key === 'iseditable') && falsy(v)) return true;
    }
  }
  return false;
}
