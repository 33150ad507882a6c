import { describe, expect, it } from 'vitest';
import { columnKindFor, describeField, slotPrefix } from '../../src/mirror/column-types.js';
import { assignColumnNames, baseColumnName, preferredColumnName } from '../../src/mirror/naming.js';
import { flag, normalizeFields } from '../../src/platform/field-meta.js';
import type { FieldMeta } from '../../src/platform/types.js';

/** One field of each kind, as storage/control pairs, with the column kind each must give. */
const KINDS: [name: string, storage: string, control: string, rules: unknown, kind: string][] = [
  ['Text1', 'Text', 'input', undefined, 'text'],
  ['Text2', 'Text', 'radio', undefined, 'text'],
  ['Text3', 'Text', 'checkbox', undefined, 'text[]'],
  ['Bigint1', 'Bigint', 'input_number', undefined, 'numeric'],
  ['Decimal1', 'Decimal', 'currency', undefined, 'numeric'],
  ['Datetime1', 'Datetime', 'datepicker', { DateFormat: 'yyyy-MM-dd' }, 'date'],
  ['Datetime2', 'Datetime', 'datepicker', { DateFormat: 'yyyy-MM-dd HH:mm:ss' }, 'timestamptz'],
  ['Bit1', 'Bit', 'switch', undefined, 'boolean'],
  ['File1', 'File', 'file-upload', undefined, 'jsonb'],
];

describe('storage kind from wherever it is', () => {
  it('reads FieldType=storage/Type=control (exports) and the swap', () => {
    for (const [name, storage, control, Rules, kind] of KINDS) {
      expect(describeField({ FieldName: name, FieldType: storage, Type: control, Rules })).toMatchObject({
        storage,
        control,
        kind,
        source: 'FieldType',
      });
      expect(describeField({ FieldName: name, FieldType: control, Type: storage, Rules })).toMatchObject({
        storage,
        control,
        kind,
        source: 'Type',
      });
    }
  });

  it('reads Type=storage alone', () => {
    for (const [name, storage, , Rules, kind] of KINDS) {
      if (kind === 'text[]') continue; // a multi-value field is told apart by its control only
      expect(describeField({ FieldName: name, Type: storage, Rules })).toMatchObject({ storage, kind, source: 'Type' });
    }
  });

  it('reads Type=control alone (the likeliest REST shape) from the slot prefix of the field name', () => {
    for (const [name, storage, control, Rules, kind] of KINDS) {
      expect(describeField({ FieldName: name, Type: control, Rules })).toMatchObject({ storage, control, kind, source: 'field name' });
    }
  });

  it('falls back to what the control implies when the name has no slot', () => {
    const c = (Type: string, Rules?: unknown): FieldMeta => ({ FieldName: 'Amount', Type, Rules });
    expect(describeField(c('input_number'))).toMatchObject({ kind: 'numeric', source: 'control' });
    expect(columnKindFor(c('percent'))).toBe('numeric');
    expect(columnKindFor(c('rate'))).toBe('numeric');
    expect(columnKindFor(c('switch'))).toBe('boolean');
    expect(columnKindFor(c('datepicker', { DateFormat: 'yyyy-MM-dd' }))).toBe('date');
    expect(columnKindFor(c('datepicker'))).toBe('timestamptz');
    expect(columnKindFor(c('metadata'))).toBe('numeric');
    expect(columnKindFor(c('checkbox'))).toBe('text[]');
    expect(columnKindFor(c('lookup', { IsMulti: true }))).toBe('text[]');
    expect(columnKindFor(c('lookup'))).toBe('text');
    expect(columnKindFor(c('file-upload'))).toBe('jsonb');
    expect(describeField(c('widget'))).toMatchObject({ kind: 'text', source: 'default' });
    expect(describeField({ FieldName: 'Title' })).toMatchObject({ kind: 'text', storage: '', control: '' });
  });

  it('lets an explicit storage kind win over the slot and the control', () => {
    expect(columnKindFor({ FieldName: 'Bigint1', FieldType: 'Text', Type: 'input' })).toBe('text');
    expect(columnKindFor({ FieldName: 'Text9', FieldType: 'Decimal', Type: 'input' })).toBe('numeric');
  });

  it('knows slot prefixes, case-insensitively, and nothing else', () => {
    expect(slotPrefix('Bigint2')).toBe('Bigint');
    expect(slotPrefix('decimal1')).toBe('decimal');
    expect(slotPrefix('Datetime12')).toBe('Datetime');
    expect(slotPrefix('Title')).toBeUndefined();
    expect(slotPrefix('Order1')).toBeUndefined();
  });
});

describe('field metadata layouts', () => {
  it('accepts flags as booleans, numbers or strings', () => {
    for (const v of [true, 1, '1', 'true', 'True', 'yes']) expect(flag(v)).toBe(true);
    for (const v of [false, 0, '0', 'false', '', null, undefined]) expect(flag(v)).toBe(false);
  });

  it('reads an array, a wrapped array, or an object keyed by field name, with any key case', () => {
    const pascal = [{ FieldID: 17, FieldName: 'Text1', DisplayName: 'Status', Type: 'radio', IsIndex: 'true' }];
    expect(normalizeFields(pascal)).toEqual([{ FieldID: '17', FieldName: 'Text1', DisplayName: 'Status', Type: 'radio', IsIndex: true }]);
    const camel = {
      fields: [{ fieldId: 'a-b', fieldName: 'Bigint1', displayName: 'Amount', type: 'input_number', fieldType: 'Bigint', isIndex: 0 }],
    };
    expect(normalizeFields(camel)).toEqual([
      { FieldID: 'a-b', FieldName: 'Bigint1', DisplayName: 'Amount', Type: 'input_number', FieldType: 'Bigint', IsIndex: false },
    ]);
    expect(normalizeFields({ Items: pascal })?.[0]?.FieldName).toBe('Text1');
    expect(normalizeFields({ Bit1: { DisplayName: 'Paid', Type: 'switch' } })).toEqual([
      { FieldName: 'Bit1', DisplayName: 'Paid', Type: 'switch' },
    ]);
  });

  it('keeps unknown keys, drops nameless entries, and refuses what is no field list', () => {
    expect(normalizeFields([{ FieldName: 'Text1', Extra: { a: 1 } }, { Type: 'input' }, 'junk'])).toEqual([
      { FieldName: 'Text1', Extra: { a: 1 } },
    ]);
    expect(normalizeFields('nope')).toBeUndefined();
    expect(normalizeFields(null)).toBeUndefined();
  });
});

describe('columns named for people', () => {
  it('snake-cases display names, keeping letters of any script', () => {
    expect(baseColumnName('Order No.')).toBe('order_no');
    expect(baseColumnName('Order date')).toBe('order_date');
    expect(baseColumnName('Größe (cm)')).toBe('größe_cm');
    expect(baseColumnName('订单日期')).toBe('订单日期');
    expect(baseColumnName('% done')).toBe('done');
    expect(baseColumnName('2nd reviewer')).toBe('f_2nd_reviewer');
    expect(baseColumnName('!!!')).toMatch(/^f_[0-9a-f]{8}$/);
  });

  it('falls back to the field name when the display name has nothing usable, or when asked to', () => {
    expect(preferredColumnName({ FieldName: 'Text1', DisplayName: 'Status' })).toBe('status');
    expect(preferredColumnName({ FieldName: 'Text1', DisplayName: '  ' })).toBe('text1');
    expect(preferredColumnName({ FieldName: 'Text1', DisplayName: '---' })).toBe('text1');
    expect(preferredColumnName({ FieldName: 'Text1' })).toBe('text1');
    expect(preferredColumnName({ FieldName: 'Text1', DisplayName: 'Status' }, 'field')).toBe('text1');
  });

  it('suffixes colliding display names in field-name order, and lets pins win', () => {
    const req = [
      { field: 'Text2', name: 'status' },
      { field: 'Text1', name: 'status' },
      { field: 'Text3', name: 'id' },
    ];
    expect(assignColumnNames(req)).toEqual(
      new Map([
        ['Text1', 'status'],
        ['Text2', 'status_2'],
        ['Text3', 'id_2'],
      ]),
    );
    expect(assignColumnNames(req, new Map(), new Map([['Text2', 'status']]))).toEqual(
      new Map([
        ['Text2', 'status'],
        ['Text1', 'status_2'],
        ['Text3', 'id_2'],
      ]),
    );
  });

  it("refuses a pin that takes another field's existing column", () => {
    expect(() =>
      assignColumnNames(
        [
          { field: 'Text1', name: 'a' },
          { field: 'Text2', name: 'b' },
        ],
        new Map([['Text1', 'status']]),
        new Map([['Text2', 'status']]),
      ),
    ).toThrow(/pinned .* holds field Text1/);
  });
});
