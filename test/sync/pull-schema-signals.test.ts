/**
 * What a page of items says about the list's fields (src/sync/pull/schema-signals.ts): the signs
 * that make a pull ask `/fields` before writing the page, and what never does.
 */
import { describe, expect, it } from 'vitest';
import type { MappedColumn } from '../../src/mirror/table-mapping.js';
import type { Item } from '../../src/platform/types.js';
import { keySignals, unfitValues, valueSignals, type SignalContext } from '../../src/sync/pull/schema-signals.js';

const col = (field: string, column: string, kind: MappedColumn['kind'] = 'text'): MappedColumn => ({ field, column, kind });
const columns = [col('Title', 'title'), col('Text4', 'notes'), col('Bigint1', 'amount', 'numeric')];
const known = new Set(['ListDataID', 'RowVersion', 'Created', 'Modified', 'Title', 'Text4', 'Bigint1']);

function context(over: Partial<SignalContext> & { omitsEmptyValues?: boolean; removed?: MappedColumn[] } = {}): SignalContext {
  return {
    mapping: { columns, removedColumns: over.removed ?? [], omitsEmptyValues: over.omitsEmptyValues ?? false },
    knownKeys: over.knownKeys ?? known,
    quietKeys: over.quietKeys ?? new Set(),
  };
}

const item = (id: string, values: Record<string, unknown>): Item => ({ ListDataID: id, RowVersion: '2', ...values });
const full = (id: string) => item(id, { Title: 't', Text4: 'n', Bigint1: '5' });

describe('key signs', () => {
  it('none on a page whose items carry exactly the known fields', () => {
    expect(keySignals([full('1'), full('2')], context())).toEqual([]);
  });

  it('a key the metadata does not name', () => {
    expect(keySignals([{ ...full('1'), Text9: 'x' }], context())).toEqual([{ kind: 'unknown-key', field: 'Text9' }]);
  });

  it('a field no item of the page carries, but not one only some items leave out', () => {
    const { Text4: _, ...without } = full('1');
    expect(keySignals([without, without], context())).toEqual([{ kind: 'field-missing', field: 'Text4' }]);
    expect(keySignals([without, full('2')], context())).toEqual([]);
  });

  it('no removal sign where the platform leaves empty values out, or for a quiet key, or on an empty page', () => {
    const { Text4: _, ...without } = full('1');
    expect(keySignals([without], context({ omitsEmptyValues: true }))).toEqual([]);
    expect(keySignals([without], context({ quietKeys: new Set(['Text4']) }))).toEqual([]);
    expect(keySignals([], context())).toEqual([]);
  });

  it("a removed field's key back, once, unless a field holds the slot again or the key is quiet", () => {
    const removed = [col('Text5', 'memo_removed')];
    const knownWithout = new Set([...known, 'Text5']);
    expect(keySignals([{ ...full('1'), Text5: 'x' }], context({ removed, knownKeys: knownWithout }))).toEqual([
      { kind: 'removed-key-back', field: 'Text5' },
    ]);
    // Not a known key either: one sign for the key.
    expect(keySignals([{ ...full('1'), Text5: 'x' }], context({ removed }))).toEqual([{ kind: 'unknown-key', field: 'Text5' }]);
    expect(
      keySignals([{ ...full('1'), Text5: 'x' }], context({ removed, knownKeys: knownWithout, quietKeys: new Set(['Text5']) })),
    ).toEqual([]);
    // A reused slot: the old field's column is removed, the new field holds the slot.
    expect(keySignals([full('1')], context({ removed: [col('Text4', 'notes_removed')] }))).toEqual([]);
  });
});

describe('value signs', () => {
  const id = (i: Item) => String(i.ListDataID);
  const version = (i: Item) => String(i.RowVersion);

  it("a value its column's type cannot hold, in an item the mirror does not hold at that version", () => {
    const items = [full('1'), item('2', { Title: 't', Text4: 'n', Bigint1: 'twelve' }), item('3', { Bigint1: 'x' })];
    const unfit = unfitValues(items, { columns }, id, 'UTC');
    expect([...unfit.keys()]).toEqual(['2', '3']);
    // Item 2 is new to the mirror; item 3 is held at its version already (judged when written).
    expect(valueSignals(unfit, new Map([['3', '2']]), version)).toEqual([{ kind: 'value-unfit', field: 'Bigint1', id: '2' }]);
    // Held at an older version: the value is new.
    expect(
      valueSignals(
        unfit,
        new Map([
          ['2', '1'],
          ['3', '1'],
        ]),
        version,
      ),
    ).toHaveLength(2);
  });

  it('empty values and text columns are never unfit', () => {
    const items = [item('1', { Text4: 'anything', Bigint1: '' }), item('2', { Bigint1: null })];
    expect(unfitValues(items, { columns }, id, 'UTC').size).toBe(0);
  });
});
