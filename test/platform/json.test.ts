import { describe, expect, it } from 'vitest';
import { isInteger, isSafeNumber, parse } from 'lossless-json';
import { parseJson } from '../../src/platform/json.js';

describe('parseJson (lossless)', () => {
  it('keeps integers beyond 2^53 as exact digit strings', () => {
    expect(parseJson('{"ListDataID": 1234567890123456789}')).toEqual({ ListDataID: '1234567890123456789' });
    expect(parseJson('[9007199254740993, -9007199254740993]')).toEqual(['9007199254740993', '-9007199254740993']);
  });

  it('gives safe integers and other numbers as JS numbers', () => {
    expect(parseJson('{"a": 12, "b": -3, "c": 1.5, "d": 9007199254740991, "e": 1e3, "f": 0}')).toEqual({
      a: 12,
      b: -3,
      c: 1.5,
      d: 9007199254740991,
      e: 1000,
      f: 0,
    });
  });

  it('leaves strings alone, including long digit strings', () => {
    expect(parseJson('{"ListDataID": "1234567890123456789", "Title": "x"}')).toEqual({ ListDataID: '1234567890123456789', Title: 'x' });
  });

  it('parses a whole envelope', () => {
    const text = '{"Status":0,"Data":[{"ListDataID":7390000000000000001,"RowVersion":3,"Title":"A"}],"Message":"","TotalCount":1}';
    expect(parseJson(text)).toEqual({
      Status: 0,
      Data: [{ ListDataID: '7390000000000000001', RowVersion: 3, Title: 'A' }],
      Message: '',
      TotalCount: 1,
    });
  });

  it('throws SyntaxError on malformed or truncated JSON', () => {
    expect(() => parseJson('{"Status":0,"Data":[')).toThrow(SyntaxError);
    expect(() => parseJson('<html>502</html>')).toThrow(SyntaxError);
    expect(() => parseJson('')).toThrow(SyntaxError);
  });
});

describe('parseJson fast path', () => {
  it('gives the same result with and without long number tokens', () => {
    const objects = [
      { ListDataID: '1234567890123456789', n: 1, f: 2.5, s: 'a,1234567890123456789', nested: [{ x: -7 }] },
      { ListDataID: '7', Title: ':[,' },
    ];
    for (const o of objects) expect(parseJson(JSON.stringify(o))).toEqual(o);
    expect(parseJson('{"a":"x:12345678901234567890"}')).toEqual({ a: 'x:12345678901234567890' });
    expect(parseJson('[ 12345678901234567890 ]')).toEqual(['12345678901234567890']);
    expect(parseJson('12345678901234567890')).toBe('12345678901234567890');
    expect(parseJson(' \n-12345678901234567890')).toBe('-12345678901234567890');
    expect(parseJson('{"a" :\n 1234567890123456789}')).toEqual({ a: '1234567890123456789' });
  });

  it('finds an integer beyond 2^53 at any depth, and leaves every other number a JS number', () => {
    expect(parseJson('{"Data":{"Items":[{"x":[1,{"id":9007199254740993}]}]}}')).toEqual({
      Data: { Items: [{ x: [1, { id: '9007199254740993' }] }] },
    });
    // 16 digits within 2^53, a long decimal, exponents: numbers, as JSON.parse gives them.
    expect(parseJson('[1234567890123456, 9007199254740991, 12345678901234567.5, 1e20, -2.5e-3]')).toEqual([
      1234567890123456,
      9007199254740991,
      Number('12345678901234567.5'),
      1e20,
      -2.5e-3,
    ]);
    expect(parseJson('{"a":[12345678901234567.5, 9007199254740993]}')).toEqual({ a: [Number('12345678901234567.5'), '9007199254740993'] });
  });
});

describe('parseJson with long integers: one JSON.parse, the digits put back in place', () => {
  const lossless = (text: string): unknown => parse(text, null, (t) => (isInteger(t) && !isSafeNumber(t) ? t : Number(t)));

  it('a page of items with 19-digit IDs as numbers: the same result as a lossless parse', () => {
    const items = Array.from({ length: 500 }, (_, i) => ({
      ListDataID: `739${String(1_000_000_000_000_000 + i * 7919).padStart(16, '0')}`,
      RowVersion: (i % 9) + 1,
      Title: i % 50 === 0 ? `note ":${'9'.repeat(19)}" and [${'8'.repeat(20)}]` : `order ${i}`,
      Amount: i * 1.25,
      Tags: ['a', 'b'],
    }));
    const text = JSON.stringify({ Status: 0, Data: items, Message: '', TotalCount: 500 }).replace(
      /"ListDataID":"(\d+)"/g,
      '"ListDataID":$1',
    );
    const parsed = parseJson(text) as { Data: { ListDataID: string; Title: string }[] };
    expect(parsed).toEqual(lossless(text));
    expect(parsed.Data[499]!.ListDataID).toBe(items[499]!.ListDataID);
  });

  it('digits inside strings that look like long integer values: still exact', () => {
    const text = '{"s":"[1234567890123456789]","a":[7390000000000000001, {"t":":7390000000000000001,"}], "b": 7390000000000000002}';
    expect(parseJson(text)).toEqual({
      s: '[1234567890123456789]',
      a: ['7390000000000000001', { t: ':7390000000000000001,' }],
      b: '7390000000000000002',
    });
  });

  it('two IDs JSON.parse rounds to the same number keep their own digits, also under integer keys', () => {
    expect(parseJson('[1234567890123456789, 1234567890123456790]')).toEqual(['1234567890123456789', '1234567890123456790']);
    expect(parseJson('{"10": 1234567890123456789, "9": 1234567890123456790}')).toEqual({
      '10': '1234567890123456789',
      '9': '1234567890123456790',
    });
  });
});
