import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonbKeyOrder, RawJsonWriter } from '../../src/mirror/raw-json.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

/** JSON.stringify's text of each key and value, the top-level keys put in `order` (a JS object would put '10' first). */
const reordered = (item: Record<string, unknown>, order: (a: string, b: string) => number): string =>
  `{${Object.keys(item)
    .sort(order)
    .filter((k) => JSON.stringify(item[k]) !== undefined)
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(item[k])}`)
    .join(',')}}`;

const odd: Record<string, unknown> = {
  ListDataID: '7100000000000000001',
  RowVersion: 3,
  Title: 'a "quoted" \\ back{slash}\ttab\nline',
  Nul: 'nul\u0000char',
  Lone: 'half\ud800pair',
  Emoji: '😀 and 中文',
  Tags: '["red","blue"]',
  Amount: 12.5,
  Paid: true,
  Gone: null,
  Skipped: undefined,
  Fn: () => 1,
  Nested: { b: 1, a: [1, 'x', { z: null }] },
  List: ['x', 2, null],
  When: new Date('2026-01-02T03:04:05Z'),
  Ünïcode: 'key',
  Ab: 'same length as Tags? no: shorter',
  '10': 'integer-like key',
  '': 'empty key',
};

describe('RawJsonWriter', () => {
  it("writes what JSON.stringify writes, with the top-level keys in jsonb's order", () => {
    const text = new RawJsonWriter().write(odd);
    expect(text).toBe(reordered(odd, jsonbKeyOrder));
    expect(text.startsWith('{"":"empty key","10":"integer-like key","Ab":')).toBe(true);
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(odd)));
  });

  it('follows each item’s own keys when items of a batch differ', () => {
    const w = new RawJsonWriter();
    const a = { Title: 'a', ListDataID: '1' };
    const b = { Title: 'b', ListDataID: '2', Extra: 'only here' };
    const c = { ListDataID: '3', Title: 'c' };
    for (const item of [a, b, a, c, b]) expect(w.write(item)).toBe(reordered(item, jsonbKeyOrder));
  });

  it('knows whether the text holds a backslash without scanning it', () => {
    const w = new RawJsonWriter();
    const cases: Record<string, unknown>[] = [
      { Title: 'plain', n: 1 },
      { Title: 'quote " here' },
      { Title: 'back \\ slash' },
      { Title: 'tab\there' },
      { Title: 'nul\u0000' },
      { Title: 'lone \ud800' },
      { Title: '😀 astral, no escape' },
      { Nested: { a: 'x"y' } },
      { Nested: { a: 'xy' }, List: ['a', 1] },
      { 'key "quoted"': 1 },
      { 'key plain': 1 },
      odd,
    ];
    for (const item of cases) {
      const text = w.write(item);
      expect([text, w.lastHadBackslash]).toEqual([text, text.includes('\\')]);
    }
  });

  it('throws as JSON.stringify does on what JSON cannot hold', () => {
    expect(() => new RawJsonWriter().write({ id: 1n })).toThrow(TypeError);
  });
});

describe("jsonbKeyOrder is PostgreSQL's order of jsonb keys", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => t?.drop());

  it('orders keys as jsonb stores them, non-ASCII keys included', async () => {
    const keys = ['Title', 'ListDataID', 'é', 'z', 'ab', 'Ünïcode', 'Uz', '中', 'aaa', '10', '9', ''];
    const doc = JSON.stringify(Object.fromEntries(keys.map((k) => [k, 1])));
    const res = (await t.db.raw('select jsonb_object_keys(?::jsonb) as k', [doc])) as { rows: { k: string }[] };
    expect([...keys].sort(jsonbKeyOrder)).toEqual(res.rows.map((r) => r.k));
  });
});
