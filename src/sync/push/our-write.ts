/**
 * Whether an item read back holds a write we sent: every value sent
 * (`carries`: how a lost create is recognised, src/sync/push/lost-creates.ts),
 * or our update at the version right after the one we held (`isOurWrite`:
 * src/sync/push/write-verdict.ts). A multi-value array counts as held when
 * its elements are (the platform may store `["1177…"]` as `[1177…]`).
 *
 * Pure: no I/O. (test/sync/push-decisions.test.ts.)
 */
import { heldElements } from '../../mirror/multi-value.js';
import type { Item } from '../../platform/types.js';

/** The item holds every value that was sent. */
export function carries(item: Item, data: Record<string, string>): boolean {
  return Object.entries(data).every(([field, value]) => sameWire(String(item[field] ?? ''), value));
}

/**
 * The item at the version right after `held` is our write of `data`: each
 * field sent holds what was sent or, when the platform did not take it, what
 * it held before; every other field is as it was. A platform user's edit in
 * between would show somewhere else. (The re-read after the write then finds
 * the values not taken: src/sync/push/settle-mirror.ts.)
 */
export function isOurWrite(item: Item, held: Item | null, data: Record<string, string>, fields: readonly string[]): boolean {
  if (carries(item, data)) return true;
  if (!held) return false;
  const was = (f: string): string => String(held[f] ?? '');
  const now = (f: string): string => String(item[f] ?? '');
  const tookSome = Object.entries(data).some(([f, v]) => sameWire(now(f), v) && !sameWire(was(f), v));
  return tookSome && fields.every((f) => (f in data ? sameWire(now(f), data[f]!) || sameWire(now(f), was(f)) : sameWire(now(f), was(f))));
}

function sameWire(held: string, sent: string): boolean {
  if (held === sent) return true;
  if (!held.trimStart().startsWith('[') || !sent.trimStart().startsWith('[')) return false;
  const a = heldElements(held).map((e) => e.text);
  const b = heldElements(sent).map((e) => e.text);
  return a.length > 0 && a.length === b.length && a.every((t, i) => t === b[i]);
}
