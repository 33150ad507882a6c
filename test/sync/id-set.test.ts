import { expect, it } from 'vitest';
import { IdSet } from '../../src/sync/pull/id-set.js';

it('holds 19-digit IDs, other IDs, and counts each once', () => {
  const s = new IdSet();
  const ids = Array.from({ length: 5000 }, (_, i) => (7_100_000_000_000_000_000n + BigInt(i * 4096)).toString());
  for (const id of ids) expect(s.add(id)).toBe(true);
  for (const id of ids) expect(s.add(id)).toBe(false);
  expect(s.size).toBe(5000);
  for (const id of ['local-1', 'abc', '0', '007', '99999999999999999999999']) expect(s.add(id)).toBe(true);
  expect(s.add('abc')).toBe(false);
  expect(s.size).toBe(5005);
  expect(s.has(ids[1234]!)).toBe(true);
  expect(s.has(7_100_000_000_000_000_001n.toString())).toBe(false);
  expect(s.has('007')).toBe(true);
  expect(s.has('7')).toBe(false);
});
