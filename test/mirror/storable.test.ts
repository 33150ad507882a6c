import { describe, expect, it } from 'vitest';
import {
  closestText,
  decodeStorable,
  escapeStorable,
  isStorable,
  storableJson,
  storableValue,
  unescapeStorable,
  STORABLE_MARK,
} from '../../src/storable.js';

const ODD = [
  'a\u0000b',
  'x\ud83dy',
  'x\ude00',
  '\ude00\ud83d',
  `${STORABLE_MARK}starts with the mark`,
  `${STORABLE_MARK}\\0`,
  '\u0000\u0000\\',
];
const PLAIN = ['\\0 is not NUL', '\\u0000 either', '', 'plain', 'emoji 😀 pair', 'back\\slash', 'mark \u0010 inside', '订单'];

describe('storable text', () => {
  it('escapes NUL, lone surrogates and a leading mark, and gives every string back exactly', () => {
    for (const s of [...ODD, ...PLAIN]) {
      const stored = escapeStorable(s);
      expect(isStorable(stored), JSON.stringify(s)).toBe(true);
      expect(unescapeStorable(stored), JSON.stringify(s)).toBe(s);
    }
    for (const s of ODD) expect(escapeStorable(s).startsWith(STORABLE_MARK)).toBe(true);
    for (const s of PLAIN) expect(escapeStorable(s)).toBe(s);
    expect(escapeStorable('a\u0000b\ud83d')).toBe(`${STORABLE_MARK}a\\0b\\uD83D`);
  });

  it('escapes keys and values at any depth; jsonb accepts the JSON', () => {
    const value = { 'k\u0000': ['v\ud800', { n: 1, 'ok 😀': 'fine', deep: 'a\u0000' }], plain: 'x', none: null };
    const stored = storableValue(value);
    const strings = JSON.stringify(stored)
      .match(/"(?:[^"\\]|\\.)*"/g)!
      .map((q) => JSON.parse(q) as string);
    for (const s of strings) expect(isStorable(s), JSON.stringify(s)).toBe(true);
    expect(decodeStorable(stored)).toEqual(value);
    expect(decodeStorable(JSON.parse(storableJson(value)))).toEqual(value);
    expect(storableJson({ a: 'plain' })).toBe('{"a":"plain"}');
  });

  it('gives typed columns the closest text: U+FFFD for what PostgreSQL cannot hold', () => {
    expect(closestText('a\u0000b\ud800c😀')).toBe('a\ufffdb\ufffdc😀');
    expect(closestText('fine')).toBe('fine');
  });
});
