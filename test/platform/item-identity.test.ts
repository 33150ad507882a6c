/**
 * One rule for an item's ID and RowVersion, over every encoding the platform
 * may send: a string, a bare JSON number beyond 2^53 as the lossless parser
 * hands it over, a numeric string, a safe number, absent, empty, negative,
 * non-numeric, and what another parser would make of them.
 */
import { LosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { itemId, itemVersion, itemVersionNumber, versionOf, versionText } from '../../src/platform/item-identity.js';
import { parseJson } from '../../src/platform/json.js';

const SNOWFLAKE = '1177823559771361293';
/** The page as the platform may send it: the ID as a bare 19-digit JSON number, the version as a number. */
const parsed = parseJson(`{"ListDataID": ${SNOWFLAKE}, "RowVersion": 3, "Big": 98765432109876543}`) as Record<string, unknown>;

describe('itemId', () => {
  const cases: { name: string; raw: unknown; want: string | null }[] = [
    { name: 'a 19-digit string', raw: SNOWFLAKE, want: SNOWFLAKE },
    { name: 'a bare 19-digit JSON number, through the lossless parser', raw: parsed.ListDataID, want: SNOWFLAKE },
    { name: 'a numeric string with blanks around it', raw: ` ${SNOWFLAKE}\n`, want: SNOWFLAKE },
    { name: 'a small safe number', raw: 42, want: '42' },
    { name: 'zero', raw: 0, want: '0' },
    { name: 'a negative number', raw: -7, want: '-7' },
    { name: 'a negative numeric string (text keys are kept as they are)', raw: '-7', want: '-7' },
    { name: 'a bigint', raw: BigInt(SNOWFLAKE), want: SNOWFLAKE },
    { name: 'a lossless-json number', raw: new LosslessNumber(SNOWFLAKE), want: SNOWFLAKE },
    { name: 'a text key', raw: 'INV-2026-001', want: 'INV-2026-001' },
    { name: 'a provisional local id', raw: 'local-5', want: 'local-5' },
    { name: 'absent', raw: undefined, want: null },
    { name: 'null', raw: null, want: null },
    { name: 'empty', raw: '', want: null },
    { name: 'blanks only', raw: '   ', want: null },
    { name: 'a NUL inside (Postgres text cannot hold it)', raw: '12\u00003', want: null },
    { name: 'a number another parser rounded (digits lost)', raw: Number(SNOWFLAKE), want: null },
    { name: 'a fraction', raw: 1.5, want: null },
    { name: 'not a number', raw: Number.NaN, want: null },
    { name: 'infinity', raw: Number.POSITIVE_INFINITY, want: null },
    { name: 'a lossless-json fraction', raw: new LosslessNumber('1.5'), want: null },
    { name: 'a boolean', raw: true, want: null },
    { name: 'an object', raw: { id: 1 }, want: null },
    { name: 'an array', raw: [SNOWFLAKE], want: null },
  ];
  it.each(cases)('$name', ({ raw, want }) => {
    expect(itemId(raw)).toBe(want);
  });
});

describe('itemVersion', () => {
  const cases: { name: string; raw: unknown; want: string | null }[] = [
    { name: 'a number', raw: 3, want: '3' },
    { name: 'a number through the lossless parser', raw: parsed.RowVersion, want: '3' },
    { name: 'a bare integer beyond 2^53, through the lossless parser', raw: parsed.Big, want: '98765432109876543' },
    { name: 'a numeric string', raw: '17', want: '17' },
    { name: 'a numeric string with blanks', raw: ' 17 ', want: '17' },
    { name: 'leading zeros', raw: '007', want: '7' },
    { name: 'zero (a write that overwrites regardless)', raw: 0, want: '0' },
    { name: 'zero as a string', raw: '000', want: '0' },
    { name: 'the largest bigint', raw: '9223372036854775807', want: '9223372036854775807' },
    { name: 'a bigint', raw: 12n, want: '12' },
    { name: 'a lossless-json number', raw: new LosslessNumber('12'), want: '12' },
    { name: 'beyond bigint', raw: '9223372036854775808', want: null },
    { name: 'twenty digits', raw: '12345678901234567890', want: null },
    { name: 'absent', raw: undefined, want: null },
    { name: 'null', raw: null, want: null },
    { name: 'empty', raw: '', want: null },
    { name: 'negative number', raw: -1, want: null },
    { name: 'negative string', raw: '-1', want: null },
    { name: 'a fraction', raw: 1.5, want: null },
    { name: 'a fraction as a string', raw: '1.5', want: null },
    { name: 'non-numeric', raw: 'v3', want: null },
    { name: 'an exponent', raw: '1e3', want: null },
    { name: 'a plus sign', raw: '+3', want: null },
    { name: 'a number another parser rounded', raw: 2 ** 60, want: null },
    { name: 'a boolean', raw: true, want: null },
    { name: 'an object', raw: { v: 1 }, want: null },
  ];
  it.each(cases)('$name', ({ raw, want }) => {
    expect(itemVersion(raw)).toBe(want);
  });

  it('as a number, to compare versions', () => {
    expect([
      itemVersionNumber('12'),
      itemVersionNumber(7),
      itemVersionNumber(''),
      itemVersionNumber(undefined),
      itemVersionNumber('-2'),
    ]).toEqual([12, 7, null, null, null]);
  });
});

describe('Version: one parser at both edges, null for none, never NaN', () => {
  it.each([
    ['an answer: a number', 5, 5],
    ['an answer: a numeric string', '5', 5],
    ['an answer: a lossless-json number', new LosslessNumber('12'), 12],
    ['an answer: absent', undefined, null],
    ['an answer: not a number', 'v3', null],
    ['an answer: NaN', Number.NaN, null],
    ['stored: a bigint read as a number', 7, 7],
    ['stored: a bigint read as text', '7', 7],
    ['stored: 0, an overwrite', 0, 0],
    ['stored: NULL', null, null],
    ['stored: the refill marker', -1, null],
    ['stored: the refill marker as text', '-1', null],
  ] as const)('%s (%s) is %s', (_name, raw, want) => {
    expect(itemVersionNumber(raw)).toBe(want);
  });

  it.each([
    [{ RowVersion: 3 }, 'RowVersion', 3],
    [{ RowVersion: '3' }, 'RowVersion', 3],
    [{ Version: 4, RowVersion: 3 }, 'Version', 4],
    [{ Text1: 'a' }, 'RowVersion', null],
    [{ RowVersion: '' }, 'RowVersion', null],
  ] as const)('versionOf(%j, %s) is %s', (item, field, want) => {
    expect(versionOf(item, field)).toBe(want);
  });

  it.each([
    [3, '3'],
    [0, '0'],
    [null, 'unknown'],
  ] as const)('versionText(%s) is %s', (version, want) => {
    expect(versionText(version)).toBe(want);
  });
});
