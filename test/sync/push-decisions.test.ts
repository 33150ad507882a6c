/**
 * Push's pure decisions, table-driven and without a database: what is sent
 * for a change (wire values, removed fields, array elements in the form the
 * item holds them, exact JSON numbers), how a rejected or unanswered PATCH,
 * a write a stopped push left in flight, an unknown base and a delete settle
 * given the item read back, what a lost create's search result means, what a
 * conflict's local side is and what each policy does, and how outcomes are
 * counted and failures recorded.
 */
import { describe, expect, it } from 'vitest';
import { createTableMapping, type MappedColumn } from '../../src/mirror/table-mapping.js';
import type { Item } from '../../src/platform/types.js';
import { conflictAction } from '../../src/conflicts/policy.js';
import { conflictLocalSide, heldConflictMessage, pullSeesConflict } from '../../src/conflicts/sides.js';
import { lostAgainError, lostCreateVerdict, withdrawVerdict } from '../../src/sync/push/lost-create-verdict.js';
import type { LostCreateSearch } from '../../src/sync/push/lost-creates.js';
import {
  describeOp,
  failureRecord,
  failureStreak,
  MAX_CONSECUTIVE_FAILURES,
  tally,
  type Outcome,
  type PushResult,
} from '../../src/sync/push/outcome.js';
import { removedFieldsError, splitRemoved, toWire, wireOrError } from '../../src/sync/push/wire.js';
import {
  afterEarlierWrite,
  afterRejectedWrite,
  deleteVerdict,
  unknownBase,
  type ReadBack,
  type SentWrite,
} from '../../src/sync/push/write-verdict.js';
import { itemVersionNumber } from '../../src/platform/item-identity.js';
import { zeroCounters } from '../../src/store/runs.js';

const col = (field: string, column: string, kind: MappedColumn['kind'], readOnly = false): MappedColumn => ({
  field,
  column,
  kind,
  readOnly,
});
const mapping = createTableMapping({
  schema: 'mirror',
  table: 'orders',
  listName: 'orders',
  idField: 'ID',
  versionField: 'RowVersion',
  createdField: 'Created',
  modifiedField: 'Modified',
  columns: [
    col('Text1', 'title', 'text'),
    col('Number1', 'amount', 'numeric'),
    col('CheckBox1', 'done', 'boolean'),
    col('MultiLookup1', 'tags', 'text[]'),
    col('Json1', 'meta', 'jsonb'),
    col('ModifiedBy', 'modified_by', 'text', true),
  ],
  removedColumns: [col('Text9', 'old_note', 'text')],
  changes: [],
  fingerprint: 'x',
});
const ZONE = 'UTC';

describe('toWire: what is sent for a change', () => {
  const cases: {
    name: string;
    changes: Record<string, unknown>;
    held?: Item | null;
    exact?: Record<string, string>;
    want: Record<string, string>;
  }[] = [
    { name: 'text as it is', changes: { title: 'a b' }, want: { Text1: 'a b' } },
    { name: 'a NULL text is the empty string', changes: { title: null }, want: { Text1: '' } },
    { name: 'a number as a plain decimal', changes: { amount: '12.50' }, want: { Number1: '12.50' } },
    { name: 'a boolean as 1 / 0; NULL as 0', changes: { done: true }, want: { CheckBox1: '1' } },
    { name: 'a cleared switch is sent as 0', changes: { done: null }, want: { CheckBox1: '0' } },
    {
      name: 'array elements take the bare form the item holds them in, a new one joins them bare',
      changes: { tags: ['11775000000000000001', '11775000000000000002'] },
      held: { MultiLookup1: '[11775000000000000001]' },
      want: { MultiLookup1: '[11775000000000000001,11775000000000000002]' },
    },
    {
      name: 'array elements held as strings stay strings',
      changes: { tags: ['a', 'b'] },
      held: { MultiLookup1: '["a"]' },
      want: { MultiLookup1: '["a","b"]' },
    },
    {
      name: 'jsonb goes as the exact text PostgreSQL holds, compacted, every digit kept',
      changes: { meta: { n: 1.2345678901234567 } },
      exact: { meta: '{"n": 1.23456789012345678901}' },
      want: { Json1: '{"n":1.23456789012345678901}' },
    },
    { name: 'several columns, one field each', changes: { title: 'x', amount: 3 }, want: { Text1: 'x', Number1: '3' } },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(toWire(mapping, c.changes, ZONE, c.held, c.exact)).toEqual(c.want);
    });

  it('a removed field, an unknown column and an unconvertible value are refused with the column named', () => {
    expect(() => toWire(mapping, { old_note: 'x' }, ZONE)).toThrow(/field Text9 \(column old_note\) is no longer on the platform/);
    expect(() => toWire(mapping, { nope: 1 }, ZONE)).toThrow(/column nope is not a field column of mirror\.orders/);
    expect(() => toWire(mapping, { amount: 'abc' }, ZONE)).toThrow(/column amount: not a number/);
    const r = wireOrError(mapping, { amount: 'abc' }, ZONE);
    expect(r).toEqual({
      ok: false,
      error: expect.stringMatching(/^cannot convert the change for the platform: column amount: not a number/),
    });
  });

  it('removed fields are split off and named; the rest is sendable', () => {
    expect(splitRemoved(mapping, { title: 'x', old_note: 'y' })).toEqual({ sendable: { title: 'x' }, removed: { old_note: 'y' } });
    expect(removedFieldsError(mapping, { old_note: 'y' })).toMatch(
      /^not sent: old_note \(field Text9\) belongs to a field that was removed/,
    );
  });
});

const item = (version: number | string | undefined, fields: Record<string, unknown> = {}): Item =>
  ({ ID: '7', ...fields, RowVersion: version }) as Item;
const found = (i: Item): ReadBack => ({ kind: 'found', item: i });
const held: Item = { ID: '7', RowVersion: 4, Text1: 'old', Number1: '1' };
const sent: SentWrite = { mapping, held, data: { Text1: 'new' } };

describe('afterRejectedWrite: a PATCH on base 4 the platform rejected or did not answer', () => {
  const base = { itemId: '7', versionField: 'RowVersion', error: 'HTTP 500', base: 4, sent };
  const cases: { name: string; remote: ReadBack; maybeApplied: boolean; sends: number; want: unknown }[] = [
    {
      name: 'unanswered, at base + 1 with our value: applied by us',
      remote: found(item(5, { Text1: 'new', Number1: '1' })),
      maybeApplied: true,
      sends: 1,
      want: { kind: 'applied', version: 5 },
    },
    {
      name: 'a version sent as a numeric string counts the same',
      remote: found(item('5', { Text1: 'new', Number1: '1' })),
      maybeApplied: true,
      sends: 1,
      want: { kind: 'applied', version: 5 },
    },
    {
      name: 'unanswered, at base + 1 with another value: a conflict',
      remote: found(item(5, { Text1: 'theirs', Number1: '1' })),
      maybeApplied: true,
      sends: 1,
      want: { kind: 'conflict', version: 5 },
    },
    {
      name: 'refused (not maybe applied), at base + 1 with our value: a conflict, not taken as ours',
      remote: found(item(5, { Text1: 'new', Number1: '1' })),
      maybeApplied: false,
      sends: 1,
      want: { kind: 'conflict', version: 5 },
    },
    {
      name: 'unanswered, still at the base: send once more',
      remote: found(item(4, held)),
      maybeApplied: true,
      sends: 1,
      want: { kind: 'send' },
    },
    {
      name: 'unanswered twice, still at the base: left pending',
      remote: found(item(4, held)),
      maybeApplied: true,
      sends: 2,
      want: { kind: 'refused' },
    },
    {
      name: 'refused at the base: pending with the platform’s error',
      remote: found(item(4, held)),
      maybeApplied: false,
      sends: 1,
      want: { kind: 'refused' },
    },
    {
      name: 'moved past the base: a conflict',
      remote: found(item(9, held)),
      maybeApplied: false,
      sends: 1,
      want: { kind: 'conflict', version: 9 },
    },
    {
      name: 'gone (asked both ways): failed for good',
      remote: { kind: 'gone' },
      maybeApplied: true,
      sends: 1,
      want: { kind: 'fail', final: true, error: expect.stringMatching(/^item 7 no longer exists on the platform/) },
    },
    {
      name: 'not readable now: pending, both errors named',
      remote: { kind: 'error', error: 'HTTP 503' },
      maybeApplied: true,
      sends: 1,
      want: { kind: 'fail', final: false, error: 'HTTP 500; and the item could not be re-read: HTTP 503' },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(afterRejectedWrite({ ...base, remote: c.remote, maybeApplied: c.maybeApplied, sends: c.sends })).toMatchObject(
        c.want as object,
      );
    });

  it('unanswered, at base + 1 holding our value but another field moved too: ours only when it carries every value sent', () => {
    const moved = found(item(5, { Text1: 'new', Number1: '2' }));
    expect(afterRejectedWrite({ ...base, remote: moved, maybeApplied: true, sends: 1 })).toEqual({ kind: 'applied', version: 5 });
    const partly = found(item(5, { Text1: 'old', Number1: '2' }));
    const two: SentWrite = { mapping, held, data: { Text1: 'new', Number1: '2' } };
    expect(afterRejectedWrite({ ...base, sent: two, remote: partly, maybeApplied: true, sends: 1 })).toEqual({
      kind: 'applied',
      version: 5,
    });
    const other = found(item(5, { Text1: 'new', Number1: '3' }));
    expect(afterRejectedWrite({ ...base, sent: two, remote: other, maybeApplied: true, sends: 1 })).toMatchObject({
      kind: 'conflict',
      version: 5,
    });
  });

  it('an overwrite (base 0) the platform refused is pending, whatever version the item is at', () => {
    expect(afterRejectedWrite({ ...base, base: 0, remote: found(item(9)), maybeApplied: false, sends: 1 })).toEqual({ kind: 'refused' });
  });
});

describe('afterEarlierWrite: a write a stopped push left in flight on base 4', () => {
  const base = { itemId: '7', versionField: 'RowVersion', base: 4, sent };
  const cases: { name: string; remote: ReadBack; want: unknown }[] = [
    { name: 'still at the base: the whole change is sent', remote: found(item(4, held)), want: { kind: 'send' } },
    {
      name: 'at base + 1 with our value: applied',
      remote: found(item(5, { Text1: 'new', Number1: '1' })),
      want: { kind: 'applied', version: 5 },
    },
    {
      name: 'at base + 1 with another value: a conflict',
      remote: found(item(5, { Text1: 'theirs', Number1: '1' })),
      want: { kind: 'conflict', version: 5 },
    },
    { name: 'further on: a conflict', remote: found(item(8)), want: { kind: 'conflict', version: 8 } },
    { name: 'gone: failed for good', remote: { kind: 'gone' }, want: { kind: 'fail', final: true } },
    {
      name: 'not readable: pending',
      remote: { kind: 'error', error: 'down' },
      want: { kind: 'fail', final: false, error: 'the item could not be read: down' },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(afterEarlierWrite({ ...base, remote: c.remote })).toMatchObject(c.want as object);
    });
});

describe('a stored base version and unknownBase: never RowVersion 0 by default', () => {
  it.each([
    [5, 5],
    ['5', 5],
    [0, 0],
    [null, null],
    [-1, null],
  ] as const)('base_version %s is %s', (raw, want) => {
    expect(itemVersionNumber(raw)).toBe(want);
  });

  const seen: Item = { ID: '7', RowVersion: 3, Text1: 'a', Number1: '1' };
  const at = { itemId: '7', mapping, versionField: 'RowVersion' };
  it('the item unchanged since the mirror saw it: its version is the base', () => {
    expect(unknownBase({ ...at, remote: found({ ...seen, RowVersion: 6 }), seen })).toEqual({ kind: 'base', base: 6 });
  });
  it('the item changed since: a conflict at its version', () => {
    expect(unknownBase({ ...at, remote: found({ ...seen, RowVersion: 6, Text1: 'b' }), seen })).toMatchObject({
      kind: 'conflict',
      version: 6,
    });
  });
  it('nothing seen: a conflict', () => {
    expect(unknownBase({ ...at, remote: found({ ...seen, RowVersion: 6 }), seen: null })).toMatchObject({ kind: 'conflict' });
  });
  it('gone or unreadable: failed, for good or for now', () => {
    expect(unknownBase({ ...at, remote: { kind: 'gone' }, seen })).toMatchObject({ kind: 'fail', final: true });
    expect(unknownBase({ ...at, remote: { kind: 'error', error: 'x' }, seen })).toEqual({
      kind: 'fail',
      final: false,
      error: 'the item could not be read: x',
    });
  });
});

describe('deleteVerdict: a delete, the item read first', () => {
  const seen: Item = { ID: '7', RowVersion: 3, Text1: 'a' };
  const cases: { name: string; remote: ReadBack; baseVersion: number | null; seen?: Item | null; want: unknown }[] = [
    { name: 'gone: applied', remote: { kind: 'gone' }, baseVersion: 3, want: { kind: 'gone' } },
    { name: 'at the base: deleted', remote: found({ ...seen }), baseVersion: 3, want: { kind: 'delete' } },
    { name: 'moved: a conflict', remote: found({ ...seen, RowVersion: 4 }), baseVersion: 3, want: { kind: 'conflict', version: 4 } },
    {
      name: 'an overwrite (base 0): deleted whatever its version',
      remote: found({ ...seen, RowVersion: 9 }),
      baseVersion: 0,
      want: { kind: 'delete' },
    },
    {
      name: 'unknown base, unchanged since seen: deleted',
      remote: found({ ...seen, RowVersion: 9 }),
      baseVersion: null,
      seen,
      want: { kind: 'delete' },
    },
    {
      name: 'unknown base, changed since seen: a conflict',
      remote: found({ ...seen, RowVersion: 9, Text1: 'b' }),
      baseVersion: null,
      seen,
      want: { kind: 'conflict', version: 9 },
    },
    {
      name: 'not readable: pending',
      remote: { kind: 'error', error: 'down' },
      baseVersion: 3,
      want: { kind: 'fail', final: false, error: 'the item could not be read before deleting it: down' },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(
        deleteVerdict({ remote: c.remote, mapping, versionField: 'RowVersion', baseVersion: c.baseVersion, seen: c.seen ?? null }),
      ).toMatchObject(c.want as object);
    });
});

describe('lost creates: what the search result means', () => {
  const cases: { name: string; search: LostCreateSearch; want: unknown }[] = [
    { name: 'one item found: adopted', search: { kind: 'found', id: '42' }, want: { kind: 'adopt', id: '42' } },
    { name: 'none found: sent', search: { kind: 'none' }, want: { kind: 'send' } },
    {
      name: 'several found: failed, naming them and the local row',
      search: { kind: 'ambiguous', ids: ['1', '2'] },
      want: {
        kind: 'fail',
        error: expect.stringMatching(/^an earlier attempt may have created the item: 2 items .*\(1, 2\).*local row local-9 /),
      },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(lostCreateVerdict(c.search, 'an earlier attempt', 'local-9')).toEqual(c.want);
    });

  it('lost a second time and still not found: not sent a third time', () => {
    expect(lostAgainError('timeout')).toMatch(/^the create's answer was lost again \(timeout\).*not sent a third time/);
  });

  it('a withdrawn create: deleted when found, left alone when ambiguous, nothing to do when never created', () => {
    expect(withdrawVerdict({ kind: 'found', id: '42' })).toMatchObject({
      kind: 'delete',
      id: '42',
      note: expect.stringContaining('item 42'),
    });
    expect(withdrawVerdict({ kind: 'ambiguous', ids: ['1', '2'] })).toMatchObject({
      kind: 'fail',
      error: expect.stringContaining('(1, 2); none was deleted'),
    });
    expect(withdrawVerdict({ kind: 'none' })).toMatchObject({ kind: 'none' });
    expect(withdrawVerdict(undefined)).toEqual({
      kind: 'none',
      note: 'withdrawn: the local row was deleted; the item was never created on the platform',
    });
  });
});

describe('conflicts: the local side and the policy', () => {
  it('the local side is every edit in the outbox now, less removed fields', () => {
    expect(conflictLocalSide(mapping, { title: 'edit2', amount: 3, old_note: 'x' })).toEqual({ title: 'edit2', amount: 3 });
  });

  it.each([
    ['local-wins', 'update', { kind: 'overwrite' }],
    ['local-wins', 'delete', { kind: 'overwrite' }],
    ['remote-wins', 'update', { kind: 'keep-remote', note: expect.stringContaining('the local edit is kept in the conflict') }],
    ['remote-wins', 'delete', { kind: 'keep-remote', note: expect.stringContaining('since the row was deleted') }],
    ['manual', 'update', { kind: 'hold' }],
    ['manual', 'delete', { kind: 'hold' }],
  ] as const)('%s on an %s: %o', (policy, op, want) => {
    expect(conflictAction(policy, op)).toEqual(want);
  });

  it('a held conflict says where each side is and how to settle it', () => {
    expect(heldConflictMessage('update', 9, 4)).toBe(
      'conflict: the platform is at version 9, the change was made on 4; settle it with "listsync conflicts resolve"',
    );
    expect(heldConflictMessage('delete', 9, 4)).toContain('the row was deleted on 4');
  });

  it.each([
    [{ remoteVersion: 5, baseVersion: 4 }, true],
    [{ remoteVersion: 4, baseVersion: 4 }, false],
    [{ remoteVersion: 5, baseVersion: 0 }, false],
    [{ remoteVersion: null, baseVersion: 4 }, false],
    [{ remoteVersion: 5, baseVersion: null }, false],
  ])('the pull sees a conflict in %o: %s', (s, want) => {
    expect(pullSeesConflict(s)).toBe(want);
  });
});

describe('outcomes and failures', () => {
  it('outcomes are counted by kind', () => {
    const result = {
      applied: 0,
      created: 0,
      deleted: 0,
      withdrawn: 0,
      conflicts: 0,
      failed: 0,
      retrying: 0,
      counters: zeroCounters(),
    } as PushResult;
    const outcomes: Outcome[] = [
      { kind: 'applied', id: '1', version: 2 },
      { kind: 'applied', id: '2', version: null },
      { kind: 'created', id: '3' },
      { kind: 'deleted' },
      { kind: 'withdrawn' },
      { kind: 'conflict', id: '4', reread: false, version: null },
      { kind: 'retry', error: 'x' },
      { kind: 'failed', error: 'y' },
    ];
    tally(result, outcomes);
    expect(result).toMatchObject({ applied: 2, created: 1, deleted: 1, withdrawn: 1, conflicts: 1, retrying: 1, failed: 1 });
  });

  it.each([
    [0, false, 5, { attempts: 1, failed: false, retryInSeconds: 30 }],
    [1, false, 5, { attempts: 2, failed: false, retryInSeconds: 60 }],
    [4, false, 5, { attempts: 5, failed: true, retryInSeconds: 480 }],
    [0, true, 5, { attempts: 1, failed: true, retryInSeconds: 30 }],
    [20, false, 50, { attempts: 21, failed: false, retryInSeconds: 1800 }],
  ])('a failure after %i attempts (final %s, max %i) is recorded as %o', (before, final, max, want) => {
    expect(failureRecord(before, final, max)).toEqual(want);
  });

  it(`${MAX_CONSECUTIVE_FAILURES} failures in a row stop the push; a success in between starts the count again`, () => {
    const s = failureStreak();
    for (let i = 0; i < MAX_CONSECUTIVE_FAILURES - 1; i++) s.count({ kind: 'retry', error: 'x' });
    s.count({ kind: 'applied', id: '1', version: 2 });
    for (let i = 0; i < MAX_CONSECUTIVE_FAILURES - 1; i++) s.count({ kind: 'failed', error: 'x' });
    expect(s.tooMany()).toBe(false);
    s.count({ kind: 'retry', error: 'x' });
    expect(s.tooMany()).toBe(true);
    expect(s.streak).toBe(MAX_CONSECUTIVE_FAILURES);
  });

  it('a failing change is named by what it did', () => {
    expect(describeOp({ op: 'create', local_id: 'local-1', item_id: null })).toBe('create of local-1');
    expect(describeOp({ op: 'update', local_id: null, item_id: '7' })).toBe('update of item 7');
    expect(describeOp({ op: 'delete', local_id: null, item_id: null })).toBe('delete of item ?');
  });
});

describe('an item read back without a version', () => {
  const seen: Item = { ID: '7', RowVersion: 3, Text1: 'a', Number1: '1' };
  const { RowVersion: _dropped, ...versionless } = seen;
  const sent: SentWrite = { mapping, held: seen, data: { Text1: 'b' } };
  const noVersion = { kind: 'fail', final: true, error: expect.stringMatching(/carries no RowVersion.*lists\[\]\.versionField/) };

  it('no base is taken from it, and no write on a base is judged by it: failed for good, the field named', () => {
    expect(unknownBase({ itemId: '7', mapping, versionField: 'RowVersion', remote: found(versionless), seen })).toEqual(noVersion);
    const rejected = {
      remote: found(versionless),
      itemId: '7',
      versionField: 'RowVersion',
      error: 'HTTP 409',
      maybeApplied: false,
      sends: 1,
      sent,
    };
    expect(afterRejectedWrite({ ...rejected, base: 3 })).toEqual(noVersion);
    expect(afterEarlierWrite({ remote: found(versionless), itemId: '7', versionField: 'RowVersion', base: 3, sent })).toEqual(noVersion);
    expect(deleteVerdict({ remote: found(versionless), mapping, versionField: 'RowVersion', baseVersion: 3, seen })).toEqual(noVersion);
  });

  it('an overwrite (base 0) and a delete judged by content need none', () => {
    const rejected = {
      remote: found(versionless),
      itemId: '7',
      versionField: 'RowVersion',
      error: 'HTTP 409',
      maybeApplied: false,
      sends: 1,
      sent,
    };
    expect(afterRejectedWrite({ ...rejected, base: 0 })).toEqual({ kind: 'refused' });
    expect(deleteVerdict({ remote: found(versionless), mapping, versionField: 'RowVersion', baseVersion: 0, seen })).toEqual({
      kind: 'delete',
    });
    expect(deleteVerdict({ remote: found(versionless), mapping, versionField: 'RowVersion', baseVersion: null, seen })).toEqual({
      kind: 'delete',
    });
  });
});
