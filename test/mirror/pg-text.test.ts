import { describe, expect, it } from 'vitest';
import { arrayLiteral, jsonbSafe } from '../../src/mirror/pg-text.js';

describe('arrayLiteral', () => {
  it('quotes every element, escapes quotes and backslashes, writes NULL', () => {
    expect(arrayLiteral([])).toBe('{}');
    expect(arrayLiteral(['a', null, 'b"c', 'd\\e', '{,}', 'NULL'])).toBe('{"a",NULL,"b\\"c","d\\\\e","{,}","NULL"}');
  });
});

describe('jsonbSafe', () => {
  it('replaces NUL and unpaired surrogate escapes, and only real escapes', () => {
    expect(jsonbSafe(JSON.stringify({ a: 'x' }))).toEqual({ json: '{"a":"x"}', changed: false });
    expect(jsonbSafe(JSON.stringify('a\u0000b'))).toEqual({ json: '"a\\ufffdb"', changed: true });
    expect(jsonbSafe(JSON.stringify('a\udc00b'))).toEqual({ json: '"a\\ufffdb"', changed: true });
    expect(jsonbSafe(JSON.stringify('\\u0000 and \\ud800 as text'))).toEqual({
      json: JSON.stringify('\\u0000 and \\ud800 as text'),
      changed: false,
    });
    expect(jsonbSafe(JSON.stringify('\\\u0000'))).toEqual({ json: '"\\\\\\ufffd"', changed: true });
    expect(jsonbSafe(JSON.stringify('😀'))).toEqual({ json: '"😀"', changed: false });
  });
});
