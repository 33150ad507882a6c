/**
 * How a write is settled, given the item read back from the platform. Pure:
 * no I/O; the caller reads the item (by ID, gone only when asked both ways:
 * src/platform/item-lookup.ts) and carries out the verdict.
 *
 * - A rejected or unanswered PATCH (`afterRejectedWrite`): at base + 1 with
 *   our values it was applied by us (the answer was lost, or a retry saw its
 *   echo), so a change is never applied twice; still at the base, an
 *   unanswered one is sent once more, then left pending with its error; a
 *   version that moved is a conflict (test/sync/write-back-faults.test.ts).
 * - A write a stopped push left in flight (`afterEarlierWrite`): the same
 *   reading, but still at the base means the whole change is sent
 *   (test/sync/latest-edit.test.ts).
 * - An unknown base (`unknownBase`): the item's version is the base only
 *   while it holds what the mirror last saw; never RowVersion 0 by default
 *   (test/sync/write-back.test.ts).
 * - A delete (`deleteVerdict`): gone counts as applied; at the base (or an
 *   overwrite) it is deleted; a version that moved is a conflict.
 * Tested table by table in test/sync/push-decisions.test.ts.
 */
import type { TableMapping } from '../../mirror/index.js';
import { itemVersionNumber, versionOf, type Version } from '../../platform/item-identity.js';
import type { Item } from '../../platform/types.js';
import { isOurWrite } from './our-write.js';
import { goneMessage } from './outcome.js';
import { writableFields } from './wire.js';

/** The item read back by ID: there, gone (asked both ways), or not readable now. */
export type ReadBack = { kind: 'found'; item: Item } | { kind: 'gone' } | { kind: 'error'; error: string };

export type WriteVerdict =
  | { kind: 'applied'; version: Version }
  /** Not applied: send the change (again). */
  | { kind: 'send' }
  /** The platform refused the change itself: pending with the platform's error. */
  | { kind: 'refused' }
  | { kind: 'fail'; error: string; final: boolean }
  /** The platform moved past the base, to `version`. */
  | { kind: 'conflict'; item: Item; version: Version };

/** What was sent, and on what, to recognise our own write in the item read back. */
export interface SentWrite {
  mapping: TableMapping;
  /** The item as the mirror held it before the write (`_raw`). */
  held: Item | null;
  /** The fields sent, as the platform's strings. */
  data: Record<string, string>;
}

/**
 * The item read back carries no version: nothing can be compared with a base or sent as one, so the
 * change fails for good with the field named (a platform that names it otherwise: lists[].versionField).
 */
function versionless(versionField: string): Extract<WriteVerdict, { kind: 'fail' }> {
  return {
    kind: 'fail',
    error: `the item read back carries no ${versionField}: a version-checked write cannot be made (set lists[].versionField if the platform names the item's version otherwise)`,
    final: true,
  };
}

/** A read that failed or found the item gone settles the change; `what` prefixes a read error. */
function unreadable(remote: Exclude<ReadBack, { kind: 'found' }>, itemId: string, what: string): Extract<WriteVerdict, { kind: 'fail' }> {
  return remote.kind === 'gone'
    ? { kind: 'fail', error: goneMessage(itemId), final: true }
    : { kind: 'fail', error: `${what}${remote.error}`, final: false };
}

/** Our write of `sent`, on `base`, is what the platform holds. */
const appliedByUs = (item: Item, version: Version, base: Version, sent: SentWrite): boolean =>
  version === base + 1 && isOurWrite(item, sent.held, sent.data, writableFields(sent.mapping));

/** A PATCH on `base` the platform rejected (`maybeApplied`: its answer may have been lost), after `sends` sends. */
export function afterRejectedWrite(input: {
  remote: ReadBack;
  itemId: string;
  versionField: string;
  error: string;
  maybeApplied: boolean;
  base: Version;
  sends: number;
  sent: SentWrite;
}): WriteVerdict {
  const { remote, base } = input;
  if (remote.kind !== 'found') return unreadable(remote, input.itemId, `${input.error}; and the item could not be re-read: `);
  const notApplied: WriteVerdict = input.maybeApplied && input.sends < 2 ? { kind: 'send' } : { kind: 'refused' };
  const version = versionOf(remote.item, input.versionField);
  // An overwrite (base 0) needs no version to be judged.
  if (version === null) return base === 0 ? notApplied : versionless(input.versionField);
  if (input.maybeApplied && appliedByUs(remote.item, version, base, input.sent)) return { kind: 'applied', version };
  if (base === 0 || version === base) return notApplied;
  return { kind: 'conflict', item: remote.item, version };
}

/** A write a stopped push left in flight, on `base` (> 0), read back. */
export function afterEarlierWrite(input: {
  remote: ReadBack;
  itemId: string;
  versionField: string;
  base: Version;
  sent: SentWrite;
}): WriteVerdict {
  const { remote, base } = input;
  if (remote.kind !== 'found') return unreadable(remote, input.itemId, 'the item could not be read: ');
  const version = versionOf(remote.item, input.versionField);
  if (version === null) return versionless(input.versionField);
  if (version === base) return { kind: 'send' };
  if (appliedByUs(remote.item, version, base, input.sent)) return { kind: 'applied', version };
  return { kind: 'conflict', item: remote.item, version };
}

/** The platform's item still holds, field for field, what the mirror last saw of it (`seen`, its `_raw`). */
export function unchangedSinceSeen(mapping: TableMapping, seen: Item | null | undefined, remote: Item): boolean {
  return Boolean(seen) && mapping.columns.every((c) => sameValue(seen![c.field], remote[c.field]));
}

const sameValue = (a: unknown, b: unknown): boolean => (a ?? '') === (b ?? '') || String(a ?? '') === String(b ?? '');

/** An update whose base is unknown, the item read back (`seen`: the mirror's `_raw` of it): its version is the base only while unchanged since seen. */
export function unknownBase(input: {
  remote: ReadBack;
  itemId: string;
  mapping: TableMapping;
  versionField: string;
  seen: Item | null;
}): Extract<WriteVerdict, { kind: 'fail' | 'conflict' }> | { kind: 'base'; base: Version } {
  const { remote } = input;
  if (remote.kind !== 'found') return unreadable(remote, input.itemId, 'the item could not be read: ');
  const version = versionOf(remote.item, input.versionField);
  if (version === null) return versionless(input.versionField);
  return unchangedSinceSeen(input.mapping, input.seen, remote.item)
    ? { kind: 'base', base: version }
    : { kind: 'conflict', item: remote.item, version };
}

/** A delete's conflict: judged by content when its base is unknown, so the item may carry no version (null). */
export type DeleteVerdict =
  | { kind: 'gone' }
  | { kind: 'delete' }
  | Extract<WriteVerdict, { kind: 'fail' }>
  | { kind: 'conflict'; item: Item; version: Version | null };

/**
 * A delete, the item read first (`seen`: the mirror's `_raw` of it, read when
 * the base is unknown). A base that is unknown (NULL, negative) is never an
 * overwrite: the item must still hold what the mirror last saw.
 */
export function deleteVerdict(input: {
  remote: ReadBack;
  mapping: TableMapping;
  versionField: string;
  /** The outbox's `base_version` as stored. */
  baseVersion: number | null;
  seen: Item | null;
}): DeleteVerdict {
  const { remote } = input;
  if (remote.kind === 'error')
    return { kind: 'fail', error: `the item could not be read before deleting it: ${remote.error}`, final: false };
  if (remote.kind === 'gone') return { kind: 'gone' };
  const version = versionOf(remote.item, input.versionField);
  const base = itemVersionNumber(input.baseVersion);
  if (base !== null && base !== 0 && version === null) return versionless(input.versionField);
  const moved = base === null ? !unchangedSinceSeen(input.mapping, input.seen, remote.item) : base !== 0 && version !== base;
  return moved ? { kind: 'conflict', item: remote.item, version } : { kind: 'delete' };
}
