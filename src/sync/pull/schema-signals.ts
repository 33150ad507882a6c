/**
 * What a page of items says about the list's fields, judged against the
 * mapping the run writes with (kept field metadata): signs that `/fields`
 * has changed since it was asked. A pull that sees one asks `/fields` before
 * it writes the page (src/sync/pull.ts I7). Pure: the caller reads the
 * stored versions `valueUnfit` needs.
 *
 * The signs:
 * - `unknown-key`: an item carries a key the metadata does not name (a field added);
 * - `field-missing`: no item of the page carries a field the mirror writes
 *   (a field removed). Not judged when the platform leaves empty values out
 *   of items (`platform.omitsEmptyValues`): a page of empty values looks the same;
 * - `removed-key-back`: an item carries the key of a field kept as removed
 *   (its slot given to another field);
 * - `value-unfit`: a value its column's type cannot hold (the field's kind
 *   changed), in an item the mirror does not hold at that version yet (a
 *   value judged when its version was written is not judged again).
 *
 * Keys in `quietKeys` (the registry's `item_keys`) say nothing: keys items
 * carry that are not fields, and fields items were seen to leave out while
 * the metadata still listed them. (test/sync/pull-schema-signals.test.ts)
 */
import type { TableMapping } from '../../mirror/index.js';
import { fromPlatformToSql, NOT_CONVERTED } from '../../mirror/convert.js';
import type { FieldMeta, Item } from '../../platform/types.js';

export type SchemaSignalKind = 'unknown-key' | 'field-missing' | 'removed-key-back' | 'value-unfit';

export interface SchemaSignal {
  kind: SchemaSignalKind;
  /** The item key (a field name). */
  field: string;
  /** For `value-unfit`: the item whose value did not fit. */
  id?: string;
}

export interface SignalContext {
  mapping: Pick<TableMapping, 'columns' | 'removedColumns' | 'omitsEmptyValues'>;
  /** Keys an item may carry (fields, the ID and version fields, noted keys). */
  knownKeys: ReadonlySet<string>;
  quietKeys: ReadonlySet<string>;
}

/** The key signs of a page (everything but `value-unfit`), at most one per key. */
export function keySignals(items: readonly Item[], c: SignalContext): SchemaSignal[] {
  const out: SchemaSignal[] = [];
  const carried = new Set<string>();
  for (const item of items) for (const key of Object.keys(item)) carried.add(key);
  for (const key of carried) if (!c.knownKeys.has(key)) out.push({ kind: 'unknown-key', field: key });
  const active = new Set(c.mapping.columns.map((col) => col.field));
  if (items.length > 0 && !c.mapping.omitsEmptyValues) {
    for (const field of active) if (!carried.has(field) && !c.quietKeys.has(field)) out.push({ kind: 'field-missing', field });
  }
  for (const col of c.mapping.removedColumns) {
    const back = carried.has(col.field) && !active.has(col.field) && !c.quietKeys.has(col.field);
    if (back && !out.some((s) => s.field === col.field)) out.push({ kind: 'removed-key-back', field: col.field });
  }
  return out;
}

/** Items with a value their column's type cannot hold: candidates for `value-unfit`, by item ID. */
export function unfitValues(
  items: readonly Item[],
  mapping: Pick<TableMapping, 'columns'>,
  idOf: (item: Item) => string | null,
  zone: string,
): Map<string, { field: string; item: Item }> {
  const typed = mapping.columns.filter((col) => col.kind !== 'text');
  const out = new Map<string, { field: string; item: Item }>();
  if (typed.length === 0) return out;
  for (const item of items) {
    const id = idOf(item);
    if (id === null) continue;
    const col = typed.find((t) => fromPlatformToSql(t.kind, item[t.field], zone) === NOT_CONVERTED);
    if (col) out.set(id, { field: col.field, item });
  }
  return out;
}

/** The unfit values in items the mirror does not hold at their version yet. */
export function valueSignals(
  candidates: ReadonlyMap<string, { field: string; item: Item }>,
  stored: ReadonlyMap<string, string | null>,
  versionOf: (item: Item) => string | null,
): SchemaSignal[] {
  const out: SchemaSignal[] = [];
  for (const [id, { field, item }] of candidates) {
    const version = versionOf(item);
    const held = stored.get(id);
    if (held !== undefined && held !== null && version !== null && BigInt(held) >= BigInt(version)) continue;
    out.push({ kind: 'value-unfit', field, id });
  }
  return out;
}

/** One line naming the signs, for the log and the run. */
export function describeSignals(signals: readonly SchemaSignal[]): string {
  const words: Record<SchemaSignalKind, string> = {
    'unknown-key': 'a key the field metadata does not name',
    'field-missing': 'no item carries the field',
    'removed-key-back': 'the key of a removed field is back',
    'value-unfit': "a value its column's type cannot hold",
  };
  return signals
    .slice(0, 10)
    .map((s) => `${s.field}: ${words[s.kind]}${s.id ? ` (item ${s.id})` : ''}`)
    .join('; ');
}

/**
 * Signs the fresh answer does not bear out, as quiet keys (so they never make a run ask again): a field
 * it still lists that no item carried, a removed field's key items carry though it names no such field.
 */
export function quietAfterAsking(signals: readonly SchemaSignal[], fields: readonly FieldMeta[]): string[] {
  const listed = new Set(fields.map((f) => f.FieldName));
  return signals
    .filter((sig) => (sig.kind === 'field-missing' && listed.has(sig.field)) || (sig.kind === 'removed-key-back' && !listed.has(sig.field)))
    .map((sig) => sig.field);
}
