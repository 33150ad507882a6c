/**
 * The three-way merge and the policy, table by table, with no database: only
 * the fields both sides changed to different values are a conflict, and the
 * list's policy decides those alone.
 */
import { describe, expect, it } from 'vitest';
import { mergeChange, mergeFields, type SameValue } from '../../src/conflicts/merge.js';
import { planFields, policyResolution } from '../../src/conflicts/policy.js';
import { samePlatformValue } from '../../src/mirror/same-value.js';

const KINDS: Record<string, 'text' | 'text[]' | 'numeric'> = { Text2: 'text', Text4: 'text', Text5: 'text[]', Bigint1: 'numeric' };
const same: SameValue = (field, a, b) => samePlatformValue(KINDS[field] ?? 'text', a, b, 'UTC');
const base = { Text2: 'Acme', Text4: 'old note', Text5: '["a","b"]', Bigint1: '3', RowVersion: 4 };

describe('mergeFields', () => {
  const cases: {
    name: string;
    local: Record<string, string>;
    remote: Record<string, unknown>;
    send?: Record<string, string>;
    same?: string[];
    conflicts?: string[];
    removed?: string[];
    base?: Record<string, unknown> | null;
  }[] = [
    {
      name: 'one changed (the user): sent',
      local: { Text4: 'new note' },
      remote: { ...base, Text2: 'Globex', RowVersion: 5 },
      send: { Text4: 'new note' },
    },
    {
      name: 'both changed differently: a conflict of that field alone, the other field sent',
      local: { Text2: 'Local Co', Text4: 'new note' },
      remote: { ...base, Text2: 'Remote Ltd', RowVersion: 5 },
      send: { Text4: 'new note' },
      conflicts: ['Text2'],
    },
    {
      name: 'both set the same value: no conflict, nothing sent',
      local: { Text2: 'Same Co' },
      remote: { ...base, Text2: 'Same Co', RowVersion: 5 },
      same: ['Text2'],
    },
    {
      name: 'the user cleared a value the platform left alone: the empty value is sent',
      local: { Text4: '' },
      remote: { ...base, Text2: 'Globex', RowVersion: 5 },
      send: { Text4: '' },
    },
    {
      name: 'the platform cleared a value the user changed: a conflict',
      local: { Text4: 'new note' },
      remote: { ...base, Text4: '', RowVersion: 5 },
      conflicts: ['Text4'],
    },
    {
      name: 'both cleared it (the platform omits the empty key): the same value',
      local: { Text4: '' },
      remote: { Text2: 'Acme', RowVersion: 5 },
      same: ['Text4'],
    },
    {
      name: 'multi-value: the same elements written another way are the same value; an element added is sent',
      local: { Text5: '["a","b","c"]', Bigint1: '3.0' },
      remote: { ...base, Text5: '["a", "b"]', RowVersion: 5 },
      send: { Text5: '["a","b","c"]' },
      same: ['Bigint1'],
    },
    {
      name: 'multi-value changed on both sides differently: a conflict',
      local: { Text5: '["a","b","c"]' },
      remote: { ...base, Text5: '["a"]', RowVersion: 5 },
      conflicts: ['Text5'],
    },
    {
      name: 'a field removed on the platform: neither sent nor a conflict',
      local: { Text4: 'new note', Text9: 'gone field' },
      remote: { ...base, RowVersion: 5 },
      send: { Text4: 'new note' },
      removed: ['Text9'],
    },
    {
      name: 'an unknown base: every field whose value differs is a conflict',
      base: null,
      local: { Text4: 'new note', Text2: 'Acme' },
      remote: { ...base, RowVersion: 5 },
      same: ['Text2'],
      conflicts: ['Text4'],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const local = Object.entries(c.local).map(([field, value]) => ({ field, local: value, removed: c.removed?.includes(field) }));
      const m = mergeFields({ local, base: c.base === undefined ? base : c.base, remote: c.remote, same });
      expect(m.send).toEqual(c.send ?? {});
      expect(m.same).toEqual(c.same ?? []);
      expect(m.conflicts.map((x) => x.field)).toEqual(c.conflicts ?? []);
      expect(m.removed).toEqual(c.removed ?? []);
    });

  it('a conflict keeps the three values: base, local, the platform', () => {
    const m = mergeFields({ local: [{ field: 'Text2', local: 'Local Co' }], base, remote: { ...base, Text2: 'Remote Ltd' }, same });
    expect(m.conflicts).toEqual([{ field: 'Text2', base: 'Acme', local: 'Local Co', remote: 'Remote Ltd' }]);
  });
});

describe('mergeChange: creates and deletes', () => {
  it('a create sends everything', () => {
    expect(mergeChange({ op: 'create' })).toEqual({ kind: 'send-all' });
  });
  it('a delete goes ahead while every field holds its base value (only the version moved)', () => {
    expect(mergeChange({ op: 'delete', fields: ['Text2', 'Text4'], base, remote: { ...base, RowVersion: 9 }, same })).toEqual({
      kind: 'delete',
    });
  });
  it('a delete of an item whose fields changed on the platform is a conflict of the whole item', () => {
    expect(mergeChange({ op: 'delete', fields: ['Text2', 'Text4'], base, remote: { ...base, Text4: 'edited' }, same })).toEqual({
      kind: 'item-conflict',
    });
  });
  it('a delete without a known base is a conflict of the whole item', () => {
    expect(mergeChange({ op: 'delete', fields: ['Text2'], base: null, remote: base, same })).toEqual({ kind: 'item-conflict' });
  });
  it('an update merges field by field', () => {
    const m = mergeChange({ op: 'update', local: [{ field: 'Text4', local: 'x' }], base, remote: base, same });
    expect(m).toMatchObject({ kind: 'fields', merge: { send: { Text4: 'x' } } });
  });
});

describe('planFields: the policy decides the conflicting fields alone', () => {
  const merge = mergeFields({
    local: [
      { field: 'Text2', local: 'Local Co' },
      { field: 'Text4', local: 'new note' },
    ],
    base,
    remote: { ...base, Text2: 'Remote Ltd' },
    same,
  });
  const table = [
    { policy: 'remote-wins', send: { Text4: 'new note' }, conflicts: 'kept-remote', resolution: 'remote-wins' },
    { policy: 'local-wins', send: { Text4: 'new note', Text2: 'Local Co' }, conflicts: 'sent', resolution: 'local-wins' },
    { policy: 'manual', send: { Text4: 'new note' }, conflicts: 'held', resolution: null },
  ] as const;
  for (const t of table)
    it(`${t.policy}: sends ${Object.keys(t.send).join(' and ')}; the conflict is ${t.conflicts}`, () => {
      const plan = planFields(t.policy, merge);
      expect(plan).toEqual({ send: t.send, conflicts: t.conflicts });
      expect(policyResolution(plan.conflicts)).toBe(t.resolution);
    });
  it('without a conflict every policy sends the same fields', () => {
    const clean = mergeFields({ local: [{ field: 'Text4', local: 'n' }], base, remote: base, same });
    for (const p of ['remote-wins', 'local-wins', 'manual'] as const)
      expect(planFields(p, clean)).toEqual({ send: { Text4: 'n' }, conflicts: 'none' });
  });
});
