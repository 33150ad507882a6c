import { describe, expect, it } from 'vitest';
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
