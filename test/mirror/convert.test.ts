import { describe, expect, it } from 'vitest';
import { fromPlatform, fromPlatformToSql, NOT_CONVERTED, plainDecimal, toPlatform } from '../../src/mirror/convert.js';
import type { ColumnKind } from '../../src/mirror/column-types.js';

const ZONES = ['UTC', 'Asia/Shanghai', 'America/New_York'];

/** Canonical wire values per kind: toPlatform(fromPlatform(x)) must give x back. */
const CANONICAL: Record<ColumnKind, string[]> = {
  text: ['hello', ' spaced ', '中文', 'a"b\\c', '0123', '1e5', '["not","parsed"]', 'line\nbreak', ''],
  numeric: ['0', '42', '-7', '3.14', '1.50', '-0.001', '9223372036854775807', '123456789012345678901234567890.123456789', ''],
  // An empty switch reads as NULL and a NULL is sent as off ("0"): see 'NULL sent per kind'.
  boolean: ['1', '0'],
  date: ['2026-01-31', '2024-02-29', '1999-12-31', '0001-01-01', '9999-12-31', ''],
  timestamptz: [
    '2026-01-31 00:00:00',
    '2026-06-15 13:45:59',
    '2024-02-29 23:59:59',
    // America/New_York DST: the day clocks spring forward (02:00 → 03:00) and fall back (02:00 → 01:00).
    '2026-03-08 01:59:59',
    '2026-03-08 03:00:00',
    '2026-11-01 00:59:59',
    '2026-11-01 01:30:00',
    '2026-11-01 02:00:00',
    '',
  ],
  'text[]': ['["a","b"]', '[]', '["中文","x\\"y"]', '["only"]', ''],
  jsonb: ['[{"name":"a.pdf","url":"https://x/a.pdf"}]', '{"a":1}', 'https://example.com/file.png', '"quoted"', ''],
};

describe('fromPlatform / toPlatform round trip', () => {
  for (const zone of ZONES) {
    for (const [kind, values] of Object.entries(CANONICAL) as [ColumnKind, string[]][]) {
      it(`${kind} in ${zone}`, () => {
        for (const x of values) {
          const c = fromPlatform(kind, x, zone);
          expect(c.ok, `${kind} ${JSON.stringify(x)}`).toBe(true);
          expect(toPlatform(kind, c.value, zone), `${kind} ${JSON.stringify(x)}`).toBe(x);
        }
      });
    }
  }
});

describe('fromPlatform values', () => {
  it('empty string, null and undefined are NULL (ok) for every kind', () => {
    for (const kind of Object.keys(CANONICAL) as ColumnKind[]) {
      for (const v of ['', null, undefined]) expect(fromPlatform(kind, v, 'UTC')).toEqual({ value: null, ok: true });
    }
  });

  it('numbers stay exact strings, beyond 2^53 too', () => {
    expect(fromPlatform('numeric', '12345678901234567891', 'UTC')).toEqual({ value: '12345678901234567891', ok: true });
    expect(fromPlatform('numeric', 12.5, 'UTC')).toEqual({ value: '12.5', ok: true });
    expect(fromPlatform('numeric', 12345678901234567891n, 'UTC')).toEqual({ value: '12345678901234567891', ok: true });
    expect(fromPlatform('numeric', { isLosslessNumber: true, value: '98765432109876543210' }, 'UTC')).toEqual({
      value: '98765432109876543210',
      ok: true,
    });
    expect(fromPlatform('numeric', '1e3', 'UTC')).toEqual({ value: '1000', ok: true });
    expect(fromPlatform('numeric', '+4', 'UTC')).toEqual({ value: '4', ok: true });
  });

  it('date-times are instants of the wall time in the platform zone', () => {
    const sh = fromPlatform('timestamptz', '2026-01-31 08:00:00', 'Asia/Shanghai');
    expect((sh.value as Date).toISOString()).toBe('2026-01-31T00:00:00.000Z');
    const ny = fromPlatform('timestamptz', '2026-07-01 12:00:00', 'America/New_York');
    expect((ny.value as Date).toISOString()).toBe('2026-07-01T16:00:00.000Z');
    // Fall back: 01:30 happens twice (EDT 05:30Z, EST 06:30Z); either instant formats back the same.
    const amb = fromPlatform('timestamptz', '2026-11-01 01:30:00', 'America/New_York');
    expect(['2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z']).toContain((amb.value as Date).toISOString());
    expect(toPlatform('timestamptz', new Date('2026-11-01T05:30:00Z'), 'America/New_York')).toBe('2026-11-01 01:30:00');
    expect(toPlatform('timestamptz', new Date('2026-11-01T06:30:00Z'), 'America/New_York')).toBe('2026-11-01 01:30:00');
    // Spring forward: 02:30 does not exist on 2026-03-08; it is read as the instant an hour later on the wall clock.
    expect(
      toPlatform('timestamptz', fromPlatform('timestamptz', '2026-03-08 02:30:00', 'America/New_York').value, 'America/New_York'),
    ).toBe('2026-03-08 03:30:00');
  });

  it('accepts ISO 8601 with T, with an offset, or with Z', () => {
    const zone = 'Asia/Shanghai';
    expect((fromPlatform('timestamptz', '2026-01-31T08:00:00', zone).value as Date).toISOString()).toBe('2026-01-31T00:00:00.000Z');
    expect((fromPlatform('timestamptz', '2026-01-31T08:00:00+08:00', zone).value as Date).toISOString()).toBe('2026-01-31T00:00:00.000Z');
    expect((fromPlatform('timestamptz', '2026-01-31T00:00:00Z', zone).value as Date).toISOString()).toBe('2026-01-31T00:00:00.000Z');
    expect((fromPlatform('timestamptz', '2026-01-31T00:00:00.123Z', zone).value as Date).toISOString()).toBe('2026-01-31T00:00:00.123Z');
    expect(fromPlatform('date', '2026-01-31T20:00:00Z', zone).value).toBe('2026-02-01');
    expect(fromPlatform('date', '2026-01-31 20:00:00', zone).value).toBe('2026-01-31');
    expect((fromPlatform('timestamptz', '2026-01-31', zone).value as Date).toISOString()).toBe('2026-01-30T16:00:00.000Z');
  });

  it('booleans from 1/0, true/false', () => {
    expect(fromPlatform('boolean', '1', 'UTC').value).toBe(true);
    expect(fromPlatform('boolean', '0', 'UTC').value).toBe(false);
    expect(fromPlatform('boolean', 'TRUE', 'UTC').value).toBe(true);
    expect(fromPlatform('boolean', false, 'UTC').value).toBe(false);
  });

  it('multi-value from a JSON-encoded array (or an array)', () => {
    expect(fromPlatform('text[]', '["a","b"]', 'UTC').value).toEqual(['a', 'b']);
    expect(fromPlatform('text[]', ['a', 1], 'UTC').value).toEqual(['a', '1']);
  });

  it('jsonb parses objects and arrays and keeps other text as a string', () => {
    expect(fromPlatform('jsonb', '[{"a":1}]', 'UTC').value).toEqual([{ a: 1 }]);
    expect(fromPlatform('jsonb', 'plain', 'UTC').value).toBe('plain');
    expect(fromPlatform('jsonb', '[broken', 'UTC').value).toBe('[broken');
  });

  it('odd inputs do not convert: value null, ok false', () => {
    const bad: [ColumnKind, unknown][] = [
      ['numeric', 'abc'],
      ['numeric', '1,5'],
      ['numeric', 'NaN'],
      ['numeric', Infinity],
      ['numeric', '1e999999'],
      ['numeric', {}],
      ['date', '2026-13-45'],
      ['date', '2026-02-30'],
      ['date', '2025-02-29'],
      ['date', 'yesterday'],
      ['date', 20260101],
      ['timestamptz', '2026-01-01 24:00:00'],
      ['timestamptz', '2026-01-01 10:61:00'],
      ['timestamptz', '2026-13-45 00:00:00'],
      ['timestamptz', 'soon'],
      ['boolean', 'yes'],
      ['boolean', '2'],
      ['boolean', {}],
      ['text[]', '["a",'],
      ['text[]', 'a,b'],
      ['text[]', '{"a":1}'],
      ['text[]', '[{"a":1}]'],
      ['text[]', '[null]'],
    ];
    for (const [kind, raw] of bad) {
      expect(fromPlatform(kind, raw, 'UTC'), `${kind} ${String(raw)}`).toEqual({ value: null, ok: false });
      expect(fromPlatformToSql(kind, raw, 'UTC'), `${kind} ${String(raw)}`).toBe(NOT_CONVERTED);
    }
  });
});

describe('fromPlatformToSql (the bulk path)', () => {
  it('gives Postgres text meaning the same value as fromPlatform', () => {
    for (const zone of ZONES) {
      for (const [kind, values] of Object.entries(CANONICAL) as [ColumnKind, string[]][]) {
        for (const x of values) {
          const sql = fromPlatformToSql(kind, x, zone);
          const value = fromPlatform(kind, x, zone).value;
          if (value === null) expect(sql).toBeNull();
          else if (kind === 'timestamptz')
            expect(new Date((sql as string).replace(' ', 'T')).getTime(), `${x} in ${zone}`).toBe((value as Date).getTime());
          else if (kind === 'boolean') expect(sql).toBe(value ? 't' : 'f');
          else if (kind === 'jsonb') expect(JSON.parse(sql as string)).toEqual(value);
          else if (kind !== 'text[]') expect(sql).toBe(value);
        }
      }
    }
    expect(fromPlatformToSql('timestamptz', '2026-01-31 08:00:00', 'Asia/Shanghai')).toBe('2026-01-31 08:00:00+08:00');
    expect(fromPlatformToSql('timestamptz', '2026-03-08 02:30:00', 'America/New_York')).toBe('2026-03-08 02:30:00-05:00');
    expect(fromPlatformToSql('text[]', '["a","b\\"c"]', 'UTC')).toBe('{"a","b\\"c"}');
    expect(fromPlatformToSql('timestamptz', '2026-01-31T00:00:00Z', 'Asia/Shanghai')).toBe('2026-01-31T00:00:00.000Z');
  });
});

describe('toPlatform values', () => {
  it('NULL sent per kind: a switch cleared is "0" (off, as the platform reads it), every other kind the empty string', () => {
    for (const kind of Object.keys(CANONICAL) as ColumnKind[]) {
      expect(toPlatform(kind, null, 'UTC'), kind).toBe(kind === 'boolean' ? '0' : '');
      expect(toPlatform(kind, undefined, 'UTC'), kind).toBe(kind === 'boolean' ? '0' : '');
    }
  });

  it("date-times before a zone's first standard offset use that offset, not local mean time, both ways", () => {
    // Asia/Shanghai: local mean time +08:05:43 until 1901, then +08:00.
    expect(fromPlatformToSql('timestamptz', '1900-01-01 00:00:00', 'Asia/Shanghai')).toBe('1900-01-01 00:00:00+08:00');
    expect((fromPlatform('timestamptz', '1900-01-01 00:00:00', 'Asia/Shanghai').value as Date).toISOString()).toBe(
      '1899-12-31T16:00:00.000Z',
    );
    expect(toPlatform('timestamptz', '1899-12-31T16:00:00+00:00', 'Asia/Shanghai')).toBe('1900-01-01 00:00:00');
    expect(toPlatform('date', new Date('1899-12-31T16:00:00Z'), 'Asia/Shanghai')).toBe('1900-01-01');
    // America/New_York: -04:56:02 before November 1883, then -05:00.
    expect(fromPlatformToSql('timestamptz', '1850-06-01 12:00:00', 'America/New_York')).toBe('1850-06-01 12:00:00-05:00');
    expect(toPlatform('timestamptz', new Date('1850-06-01T17:00:00Z'), 'America/New_York')).toBe('1850-06-01 12:00:00');
    // Later offsets (daylight saving included) are the zone's own.
    expect(fromPlatformToSql('timestamptz', '1940-07-01 09:00:00', 'Asia/Shanghai')).toBe('1940-07-01 09:00:00+09:00');
  });

  it('multi-value arrays keep 19-digit IDs written as bare numbers exactly', () => {
    const wire = '[1177823559771361293,"1177823559771361295",9223372036854775807,1000000000000000001]';
    expect(fromPlatform('text[]', wire, 'UTC').value).toEqual([
      '1177823559771361293',
      '1177823559771361295',
      '9223372036854775807',
      '1000000000000000001',
    ]);
    expect(fromPlatformToSql('text[]', wire, 'UTC')).toBe(
      '{"1177823559771361293","1177823559771361295","9223372036854775807","1000000000000000001"}',
    );
    expect(fromPlatformToSql('jsonb', '[{"FileID":1177823559771361293,"n":1.50}]', 'UTC')).toBe(
      '[{"FileID":1177823559771361293,"n":1.50}]',
    );
  });

  it('numbers never use exponent notation', () => {
    expect(toPlatform('numeric', 1e21, 'UTC')).toBe('1000000000000000000000');
    expect(toPlatform('numeric', 1.5e-7, 'UTC')).toBe('0.00000015');
    expect(toPlatform('numeric', '2.5E+3', 'UTC')).toBe('2500');
    expect(toPlatform('numeric', '12345678901234567890.5', 'UTC')).toBe('12345678901234567890.5');
  });

  it('accepts what Postgres and the outbox hand back', () => {
    // timestamptz as Date (pg) or as ISO 8601 with offset (to_jsonb in the trigger)
    expect(toPlatform('timestamptz', new Date('2026-01-31T00:00:00Z'), 'Asia/Shanghai')).toBe('2026-01-31 08:00:00');
    expect(toPlatform('timestamptz', '2026-01-31T00:00:00+00:00', 'Asia/Shanghai')).toBe('2026-01-31 08:00:00');
    expect(toPlatform('timestamptz', '2026-03-08T07:30:00+00:00', 'America/New_York')).toBe('2026-03-08 03:30:00');
    expect(toPlatform('boolean', true, 'UTC')).toBe('1');
    expect(toPlatform('boolean', false, 'UTC')).toBe('0');
    expect(toPlatform('text[]', ['a', 'b'], 'UTC')).toBe('["a","b"]');
    expect(toPlatform('jsonb', [{ a: 1 }], 'UTC')).toBe('[{"a":1}]');
    expect(toPlatform('date', '2026-01-31', 'UTC')).toBe('2026-01-31');
  });

  it('throws on values the column could not hold', () => {
    expect(() => toPlatform('numeric', 'abc', 'UTC')).toThrow(/not a number/);
    expect(() => toPlatform('boolean', 'yes', 'UTC')).toThrow(/not a boolean/);
    expect(() => toPlatform('date', '2026-13-45', 'UTC')).toThrow(/not a date/);
  });
});

describe('plainDecimal', () => {
  it('expands exponents exactly', () => {
    expect(plainDecimal('1.23e2')).toBe('123');
    expect(plainDecimal('1.23e1')).toBe('12.3');
    expect(plainDecimal('-1.23e-2')).toBe('-0.0123');
    expect(plainDecimal('5e0')).toBe('5');
    expect(plainDecimal('.5')).toBe('0.5');
    expect(plainDecimal('x')).toBeNull();
    expect(plainDecimal('.')).toBeNull();
  });
});
