/**
 * Which platform field is which: its FieldID, whether a registry slot now
 * holds another field, and the fingerprint of what in the field metadata
 * shapes the table. Pure: no I/O (the registry itself is src/mirror/list-registry.ts).
 */
import { createHash } from 'node:crypto';
import type { FieldMeta } from '../platform/types.js';
import { columnKindFor, describeField, parseRules } from './column-types.js';
import type { RegistryField } from './list-registry.js';

/** A stable hash of what in the field metadata shapes the table: names, types and kinds. */
export function fieldsFingerprint(fields: readonly FieldMeta[]): string {
  const shape = fields
    .map((f) => [f.FieldName, String(f.FieldType ?? ''), String(f.Type ?? ''), columnKindFor(f), dateFormatOf(f)])
    .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex');
}

function dateFormatOf(f: FieldMeta): string {
  const rules = parseRules(f.Rules);
  const key = Object.keys(rules).find((k) => k.toLowerCase() === 'dateformat');
  const v = key === undefined ? undefined : rules[key];
  return typeof v === 'string' ? v : '';
}

/**
 * Whether the platform's field `f` is another field than the one the registry knew in its slot: its
 * FieldID differs (when both are known); without IDs, its control or storage kind differs (when both
 * are known).
 */
export function isAnotherField(before: RegistryField, f: FieldMeta): boolean {
  const id = fieldIdOf(f);
  if (before.fieldId !== undefined && id !== undefined) return before.fieldId !== id;
  const shape = describeField(f);
  const differs = (a: string | undefined, b: string): boolean =>
    a !== undefined && a !== '' && b !== '' && a.toLowerCase() !== b.toLowerCase();
  return differs(before.control, shape.control) || differs(before.storage, shape.storage);
}

/** The platform's FieldID as a string, when it sent one. */
export function fieldIdOf(f: FieldMeta): string | undefined {
  const id: unknown = f.FieldID;
  return typeof id === 'string' && id !== '' ? id : typeof id === 'number' || typeof id === 'bigint' ? String(id) : undefined;
}
