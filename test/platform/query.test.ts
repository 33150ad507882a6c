import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/platform/platform-errors.js';
import { asc, desc, query, where } from '../../src/platform/query.js';
import { parsePlatformDateTime, platformDate, platformDateTime, tryParsePlatformDateTime } from '../../src/platform/dates.js';
import { Operator } from '../../src/platform/types.js';

const ZONE = 'Asia/Shanghai'; // UTC+8, no DST

describe('query builder', () => {
  it('uses operator names and string values', () => {
    expect(where('Status').eq('Open')).toEqual({ Field: 'Status', Type: Operator.Equal, Value: 'Open' });
    expect(where('Amount').gt(5)).toEqual({ Field: 'Amount', Type: 3, Value: '5' });
    expect(where('Amount').lte(10n)).toEqual({ Field: 'Amount', Type: 1, Value: '10' });
    expect(where('Done').eq(true)).toEqual({ Field: 'Done', Type: 0, Value: '1' });
    expect(where('Done').ne(false)).toEqual({ Field: 'Done', Type: 5, Value: '0' });
    expect(where('Owner').isNull()).toEqual({ Field: 'Owner', Type: 6, Value: '' });
    expect(where('Owner').isNotNull()).toEqual({ Field: 'Owner', Type: 7, Value: '' });
    expect(where('Title').startsWith('INV-')).toEqual({ Field: 'Title', Type: 8, Value: 'INV-' });
    expect(where('Title').contains('abc')).toEqual({ Field: 'Title', Type: 10, Value: 'abc' });
    expect(where('Amount').lt(1)).toEqual({ Field: 'Amount', Type: 4, Value: '1' });
  });

  it('in() JSON-encodes the values as an array of strings', () => {
    const f = where('ListDataID').in(['1234567890123456789', 42]);
    expect(f).toEqual({ Field: 'ListDataID', Type: Operator.In, Value: '["1234567890123456789","42"]' });
    expect(JSON.parse(f.Value)).toEqual(['1234567890123456789', '42']);
  });

  it('formats dates as the calendar date in the platform zone', () => {
    // 2026-03-01T20:30Z is already 2 March in Shanghai.
    const instant = new Date('2026-03-01T20:30:00Z');
    expect(where('Modified', { zone: ZONE }).gte(instant).Value).toBe('2026-03-02');
    expect(where('Modified').gte(DateTime.fromISO('2026-03-01T20:30:00Z').setZone(ZONE)).Value).toBe('2026-03-02');
    expect(() => where('Modified').gte(instant)).toThrow(ValidationError);
  });

  it('builds a whole query', () => {
    const q = query({ zone: ZONE })
      .select('Title', 'Status', 'Title')
      .where('Modified')
      .gte(new Date('2026-01-10T00:00:00Z'))
      .orWhere('Status')
      .in(['Open', 'Held'])
      .filter(where('Title').startsWith('A'))
      .orderBy('Modified')
      .orderBy('Created', 'desc')
      .sort(asc('OrderNo'))
      .page(3)
      .pageSize(1000)
      .build();
    expect(q).toEqual({
      Fields: ['Title', 'Status'],
      Filters: [
        { Field: 'Modified', Type: 2, Value: '2026-01-10' },
        { Field: 'Status', Type: 9, Value: '["Open","Held"]', Pre: 'or' },
        { Field: 'Title', Type: 8, Value: 'A' },
      ],
      Sorts: [
        { Field: 'Modified', Desc: false },
        { Field: 'Created', Desc: true },
        { Field: 'OrderNo', Desc: false },
      ],
      PageIndex: 3,
      PageSize: 1000,
    });
    expect(desc('X')).toEqual({ Field: 'X', Desc: true });
    expect(query().build()).toEqual({});
  });

  it('makes a PageSize over 1000 impossible', () => {
    // @ts-expect-error a literal over 1000 does not compile
    expect(() => query().pageSize(5000)).toThrow(ValidationError);
    // @ts-expect-error nor does a fraction
    expect(() => query().pageSize(1.5)).toThrow(ValidationError);
    const n: number = 1001;
    expect(() => query().pageSize(n)).toThrow(/PageSize must be an integer from 1 to 1000/);
    expect(() => query().pageSize(0)).toThrow(ValidationError);
    expect(query().pageSize(1).build().PageSize).toBe(1);
    expect(() => query().page(0)).toThrow(ValidationError);
  });
});

describe('platform dates (non-UTC zone)', () => {
  it('formats an instant as the platform date and date-time', () => {
    const instant = new Date('2026-03-01T17:05:09Z');
    expect(platformDate(instant, ZONE)).toBe('2026-03-02');
    expect(platformDateTime(instant, ZONE)).toBe('2026-03-02 01:05:09');
    expect(platformDate(instant, 'UTC')).toBe('2026-03-01');
    expect(platformDateTime(DateTime.fromISO('2026-07-01T12:00:00', { zone: 'America/New_York' }), 'Europe/Berlin')).toBe(
      '2026-07-01 18:00:00',
    );
  });

  it('parses YYYY-MM-DD HH:mm:ss and YYYY-MM-DD as wall-clock time in the zone', () => {
    const dt = parsePlatformDateTime('2026-03-02 01:05:09', ZONE);
    expect(dt.toUTC().toISO()).toBe('2026-03-01T17:05:09.000Z');
    expect(dt.zoneName).toBe(ZONE);
    expect(parsePlatformDateTime('2026-03-02', ZONE).toUTC().toISO()).toBe('2026-03-01T16:00:00.000Z');
  });

  it('parses ISO 8601 with and without an offset', () => {
    expect(parsePlatformDateTime('2026-03-02T01:05:09', ZONE).toUTC().toISO()).toBe('2026-03-01T17:05:09.000Z');
    expect(parsePlatformDateTime('2026-03-01T17:05:09Z', ZONE).toFormat('yyyy-MM-dd HH:mm:ss')).toBe('2026-03-02 01:05:09');
    expect(parsePlatformDateTime('2026-03-01T19:05:09+02:00', ZONE).toFormat('yyyy-MM-dd HH:mm:ss')).toBe('2026-03-02 01:05:09');
    expect(parsePlatformDateTime('2026-03-01T17:05:09.250Z', ZONE).millisecond).toBe(250);
  });

  it('round-trips through the platform format', () => {
    const instant = new Date('2026-10-24T00:30:00Z');
    for (const zone of [ZONE, 'Europe/Berlin', 'America/Los_Angeles']) {
      expect(parsePlatformDateTime(platformDateTime(instant, zone), zone).toMillis()).toBe(instant.getTime());
    }
  });

  it('an offset-less time in the hour repeated at the end of DST is ambiguous: the platform format cannot tell', () => {
    // 00:30Z and 01:30Z on 2026-10-25 are both 02:30 in Berlin.
    const a = platformDateTime(new Date('2026-10-25T00:30:00Z'), 'Europe/Berlin');
    const b = platformDateTime(new Date('2026-10-25T01:30:00Z'), 'Europe/Berlin');
    expect(a).toBe('2026-10-25 02:30:00');
    expect(b).toBe(a);
    expect(parsePlatformDateTime(a, 'Europe/Berlin').isValid).toBe(true);
  });

  it('rejects what is not a date', () => {
    expect(() => parsePlatformDateTime('2026-13-01', ZONE)).toThrow(RangeError);
    expect(() => parsePlatformDateTime('yesterday', ZONE)).toThrow(RangeError);
    expect(() => platformDate(new Date(), 'Mars/Olympus')).toThrow(RangeError);
    expect(tryParsePlatformDateTime('', ZONE)).toBeUndefined();
    expect(tryParsePlatformDateTime('nope', ZONE)).toBeUndefined();
  });
});
