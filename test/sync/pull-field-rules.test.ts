/** What a pull reads off the field metadata before it plans: pull/plan.ts › cursorUnsortable, pull/schema-signals.ts › quietAfterAsking. */
import { describe, expect, it } from 'vitest';
import type { FieldMeta } from '../../src/platform/types.js';
import { cursorUnsortable } from '../../src/sync/pull/plan.js';
import { quietAfterAsking, type SchemaSignal } from '../../src/sync/pull/schema-signals.js';

describe('cursorUnsortable', () => {
  it.each([
    { name: 'sortable and indexed', meta: { IsSort: true, IsIndex: true }, want: null },
    { name: 'indexed only', meta: { IsSort: false, IsIndex: true }, want: null },
    { name: 'sortable only', meta: { IsSort: true, IsIndex: false }, want: null },
    { name: 'flags not given: assumed readable', meta: {}, want: null },
    {
      name: 'neither: why',
      meta: { IsSort: false, IsIndex: false },
      want: 'the cursor field Modified is neither sortable nor indexed on the platform',
    },
  ])('$name', ({ meta, want }) => {
    expect(cursorUnsortable([{ FieldName: 'Title' }, { FieldName: 'Modified', ...meta }], 'Modified')).toBe(want);
  });
  it('a cursor field the metadata does not list is not judged', () => {
    expect(cursorUnsortable([{ FieldName: 'Title', IsSort: false, IsIndex: false }], 'Modified')).toBeNull();
  });
});

describe('quietAfterAsking', () => {
  const fields: FieldMeta[] = [{ FieldName: 'Title' }, { FieldName: 'Text1' }];
  it.each<{ name: string; signals: SchemaSignal[]; want: string[] }>([
    { name: 'a field still listed that no item carried: quiet', signals: [{ kind: 'field-missing', field: 'Text1' }], want: ['Text1'] },
    {
      name: 'a missing field the answer no longer lists: removed, not quiet',
      signals: [{ kind: 'field-missing', field: 'Text2' }],
      want: [],
    },
    {
      name: 'a removed field’s key back though the answer names no such field: quiet',
      signals: [{ kind: 'removed-key-back', field: 'Bigint1' }],
      want: ['Bigint1'],
    },
    {
      name: 'a removed field’s key back that the answer lists again: a field, not quiet',
      signals: [{ kind: 'removed-key-back', field: 'Text1' }],
      want: [],
    },
    { name: 'an unknown key says a field was added: never quiet', signals: [{ kind: 'unknown-key', field: 'Title' }], want: [] },
    { name: 'a value that did not fit: never quiet', signals: [{ kind: 'value-unfit', field: 'Text1', id: '1' }], want: [] },
    {
      name: 'several signs: only the ones the answer does not bear out, in order',
      signals: [
        { kind: 'removed-key-back', field: 'Old' },
        { kind: 'unknown-key', field: 'New' },
        { kind: 'field-missing', field: 'Title' },
      ],
      want: ['Old', 'Title'],
    },
  ])('$name', ({ signals, want }) => {
    expect(quietAfterAsking(signals, fields)).toEqual(want);
  });
});
