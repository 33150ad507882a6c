/**
 * Recognising our own write in an item read back, with no database and no
 * platform: every value sent (a lost create), or our update at the version
 * right after the one held, fields the platform did not take left as they were.
 */
import { describe, expect, it } from 'vitest';
import type { Item } from '../../src/platform/types.js';
import { carries, isOurWrite } from '../../src/sync/push/our-write.js';

describe('carries', () => {
  it.each([
    ['every value sent', { Text1: 'a', Number1: '2' }, { Text1: 'a' }, true],
    ['a value differs', { Text1: 'b' }, { Text1: 'a' }, false],
    ['a field absent, sent empty', { Text1: 'a' }, { Number1: '' }, true],
    ['a field absent, sent a value', { Text1: 'a' }, { Number1: '2' }, false],
    ['a multi-value array stored with bare numbers', { Multi1: '[1177823559771361293]' }, { Multi1: '["1177823559771361293"]' }, true],
    ['a multi-value array with another element', { Multi1: '[1, 3]' }, { Multi1: '["1","2"]' }, false],
    ['an empty array is no match for a text', { Multi1: '[]' }, { Multi1: '["1"]' }, false],
  ] as const)('%s: %j holds %j is %s', (_name, item, data, want) => {
    expect(carries(item, data)).toBe(want);
  });
});

describe('isOurWrite', () => {
  const held: Item = { Text1: 'a', Text2: 'x', Calc1: 'c' };
  const fields = ['Text1', 'Text2', 'Calc1'];
  it.each([
    ['holds what was sent', { Text1: 'b', Text2: 'x', Calc1: 'c' }, { Text1: 'b' }, held, true],
    ['took one field, kept its own value of another', { Text1: 'b', Text2: 'x', Calc1: 'c' }, { Text1: 'b', Calc1: 'z' }, held, true],
    ['took one field, another field moved too', { Text1: 'b', Text2: 'y', Calc1: 'c' }, { Text1: 'b', Calc1: 'z' }, held, false],
    ['took nothing of what was sent', { Text1: 'a', Text2: 'x', Calc1: 'c' }, { Text1: 'b', Calc1: 'z' }, held, false],
    ['another value, nothing held to compare with', { Text1: 'q', Text2: 'x', Calc1: 'c' }, { Text1: 'b' }, null, false],
  ] as const)('%s: %s', (_name, item, data, was, want) => {
    expect(isOurWrite(item, was, data, fields)).toBe(want);
  });
});
