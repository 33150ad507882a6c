/**
 * Which platform field is which, with no database: the FieldID in any JSON
 * type, a registry slot now holding another field, and the fingerprint of
 * what in the metadata shapes the table.
 */
import { describe, expect, it } from 'vitest';
import { fieldIdOf, fieldsFingerprint, isAnotherField } from '../../src/mirror/field-identity.js';
import type { RegistryField } from '../../src/mirror/list-registry.js';
import type { FieldMeta } from '../../src/platform/types.js';

const slot: RegistryField = {
  field: 'Text1',
  column: 'status',
  kind: 'text',
  platformKind: 'text',
  fieldType: 'Text',
  type: 'Dropdown',
  storage: 'Text',
  control: 'Dropdown',
  indexed: false,
  system: false,
  fixed: false,
  removed: false,
};

describe('fieldIdOf', () => {
  it.each([
    ['a string', 'f-1', 'f-1'],
    ['a number', 42, '42'],
    ['a bigint', 1177823559771361293n, '1177823559771361293'],
    ['empty', '', undefined],
    ['absent', undefined, undefined],
    ['an object', { id: 1 }, undefined],
  ] as const)('%s: %s is %s', (_name, id, want) => {
    expect(fieldIdOf({ FieldName: 'Text1', FieldID: id } as FieldMeta)).toBe(want);
  });
});

describe('isAnotherField', () => {
  it.each([
    ['the same FieldID', { ...slot, fieldId: 'a' }, { FieldName: 'Text1', FieldID: 'a', FieldType: 'Text', Type: 'Checkbox' }, false],
    ['another FieldID', { ...slot, fieldId: 'a' }, { FieldName: 'Text1', FieldID: 'b', FieldType: 'Text', Type: 'Dropdown' }, true],
    ['no IDs, the same control', slot, { FieldName: 'Text1', FieldType: 'Text', Type: 'Dropdown' }, false],
    ['no IDs, the control in another case', slot, { FieldName: 'Text1', FieldType: 'Text', Type: 'dropdown' }, false],
    ['no IDs, another control', slot, { FieldName: 'Text1', FieldType: 'Text', Type: 'Checkbox' }, true],
    ['no IDs, another storage', slot, { FieldName: 'Text1', FieldType: 'Bigint', Type: 'Dropdown' }, true],
    ['nothing known before', { ...slot, storage: undefined, control: undefined }, { FieldName: 'Text1', FieldType: 'Bigint' }, false],
  ] as const)('%s: %s', (_name, before, f, want) => {
    expect(isAnotherField(before as RegistryField, f as FieldMeta)).toBe(want);
  });
});

describe('fieldsFingerprint', () => {
  const a: FieldMeta = { FieldName: 'Text1', FieldType: 'Text', Type: 'Text' };
  const b: FieldMeta = { FieldName: 'Datetime1', FieldType: 'Datetime', Rules: { DateFormat: 'yyyy-MM-dd' } };
  it.each([
    ['the same fields in another order', [b, a], true],
    ['a display name changed', [{ ...a, DisplayName: 'Status' }, b], true],
    ['a type changed', [{ ...a, FieldType: 'Bigint' }, b], false],
    ['a date format changed', [a, { ...b, Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } }], false],
    ['a field more', [a, b, { FieldName: 'Text2' }], false],
  ] as const)('%s: same fingerprint is %s', (_name, fields, same) => {
    expect(fieldsFingerprint(fields) === fieldsFingerprint([a, b])).toBe(same);
  });
});
