import { describe, expect, it } from 'vitest';
import { columnKindFor, columnSqlType, parseRules } from '../../src/mirror/column-types.js';
import type { FieldMeta } from '../../src/platform/types.js';

const f = (FieldType: string, Type: string, Rules?: unknown): FieldMeta => ({ FieldName: 'F', FieldType, Type, Rules });

describe('columnKindFor', () => {
  it('maps the known FieldType/Type pairs', () => {
    expect(columnKindFor(f('Text', 'input'))).toBe('text');
    expect(columnKindFor(f('Text', 'textarea'))).toBe('text');
    expect(columnKindFor(f('Text', 'radio'))).toBe('text');
    expect(columnKindFor(f('Text', 'hyperlink'))).toBe('text');
    expect(columnKindFor(f('Text', 'flowstatus'))).toBe('text');
    expect(columnKindFor(f('Text', 'lookup'))).toBe('text');
    expect(columnKindFor(f('Text', 'checkbox'))).toBe('text[]');
    expect(columnKindFor(f('Bit', 'switch'))).toBe('boolean');
    expect(columnKindFor(f('Bigint', 'input_number'))).toBe('numeric');
    expect(columnKindFor(f('Decimal', 'input_number'))).toBe('numeric');
    expect(columnKindFor(f('File', 'upload'))).toBe('jsonb');
    expect(columnKindFor(f('Whatever', 'widget'))).toBe('text');
    expect(columnKindFor({ FieldName: 'X' } as FieldMeta)).toBe('text');
  });

  it('tells dates from date-times by Rules.DateFormat, object or JSON string', () => {
    expect(columnKindFor(f('Datetime', 'datepicker', { DateFormat: 'yyyy-MM-dd' }))).toBe('date');
    expect(columnKindFor(f('Datetime', 'datepicker', '{"DateFormat":"yyyy-MM-dd"}'))).toBe('date');
    expect(columnKindFor(f('Datetime', 'datepicker', { DateFormat: 'yyyy-MM-dd HH:mm:ss' }))).toBe('timestamptz');
    expect(columnKindFor(f('Datetime', 'datepicker', '{"DateFormat":"yyyy-MM-dd HH:mm"}'))).toBe('timestamptz');
    expect(columnKindFor(f('Datetime', 'datepicker'))).toBe('timestamptz');
    expect(columnKindFor(f('Datetime', 'datepicker', '{not json'))).toBe('timestamptz');
    expect(columnKindFor(f('Datetime', 'datepicker', { dateformat: 'yyyy/MM/dd' }))).toBe('date');
  });

  it('names the SQL types', () => {
    expect(columnSqlType('timestamptz')).toBe('timestamptz');
    expect(columnSqlType('text[]')).toBe('text[]');
  });
});

describe('parseRules', () => {
  it('is tolerant', () => {
    expect(parseRules(undefined)).toEqual({});
    expect(parseRules('')).toEqual({});
    expect(parseRules('[1]')).toEqual({});
    expect(parseRules('{"a":1}')).toEqual({ a: 1 });
    expect(parseRules({ a: 1 })).toEqual({ a: 1 });
  });
});
