/**
 * An item's ID and RowVersion as listsync keeps them, whatever JSON type the
 * platform sent them in: the one rule for the pull, reconcile, the real-time
 * applier, the mirror's upsert and the item lookups.
 *
 * IDs are 19-digit numbers beyond JavaScript's safe integer range: they are
 * kept as text end to end. A bare JSON number of that size arrives from the
 * lossless parser (platform/json.ts) as its exact digit string; a number that
 * is not a safe integer here was rounded by someone else's parser, and its
 * digits are lost, so it is no ID (never store a neighbour's ID).
 *
 * `itemId`: a string, trimmed (a list may key on text: any non-empty text
 * without a NUL is an ID); a safe integer number; a bigint; a lossless-json
 * number holding an integer. Null when absent, empty, a NUL inside, a
 * fraction, a rounded or non-finite number, a boolean, an object.
 *
 * `itemVersion`: the decimal digits of a non-negative integer that fits a
 * Postgres bigint, leading zeros dropped: from a safe integer number, a
 * numeric string (trimmed), a bigint, the lossless parser's digit string or a
 * lossless-json number. Null when absent, empty, negative, a fraction,
 * non-numeric or beyond bigint (not a version a mirror row could hold).
 *
 * `Version` is how push, conflicts and the mirror's settling hold a version
 * from the answer to the outbox: a number, `null` where none is carried or
 * known, never NaN. `itemVersionNumber` is its one parser, at both edges: a
 * value of the platform's answer (`versionOf` an item), and a version stored
 * in PostgreSQL (an outbox `base_version`, a conflict's version, the mirror's
 * `row_version`: a bigint, read as a number or as text), where NULL or the
 * refill marker (-1) is none.
 *
 * Pure: no I/O. Tested over every encoding in test/platform/item-identity.test.ts.
 */
import type { Item } from './types.js';

/**
 * An item's version (the platform's RowVersion): a non-negative whole number, exact up to 2^53 (versions start
 * at 1 and grow by one; 0 is sent only as an overwrite). Where an item carries none or none is known: null.
 */
export type Version = number;

/** Largest value of a Postgres bigint, the mirror's `row_version`. */
const BIGINT_MAX = '9223372036854775807';

/** An item's ID as text, or null when the value is no usable ID. */
export function itemId(raw: unknown): string | null {
  if (typeof raw === 'string') {
    const t = raw.trim();
    return t === '' || t.includes('\0') ? null : t;
  }
  if (typeof raw === 'number') return Number.isSafeInteger(raw) ? String(raw) : null;
  if (typeof raw === 'bigint') return raw.toString();
  const lossless = losslessDigits(raw);
  return lossless !== null && /^-?\d+$/.test(lossless) ? lossless : null;
}

/** An item's RowVersion as the digits of a non-negative bigint, or null when it is none. */
export function itemVersion(raw: unknown): string | null {
  let text: string | null;
  if (typeof raw === 'string') text = raw.trim();
  else if (typeof raw === 'number') text = Number.isSafeInteger(raw) ? String(raw) : null;
  else if (typeof raw === 'bigint') text = raw.toString();
  else text = losslessDigits(raw);
  if (text === null || !/^\d{1,19}$/.test(text)) return null;
  const digits = text.replace(/^0+(?=\d)/, '');
  return digits.length < BIGINT_MAX.length || (digits.length === BIGINT_MAX.length && digits <= BIGINT_MAX) ? digits : null;
}

/** A version as the platform sent it or PostgreSQL stored it, to compare versions; null when it is none. */
export function itemVersionNumber(raw: unknown): Version | null {
  const v = itemVersion(raw);
  return v === null ? null : Number(v);
}

/** A version as a message shows it. */
export const versionText = (version: Version | null): string => (version === null ? 'unknown' : String(version));

/** The item's version, from its version field (`lists[].versionField`, RowVersion by default); null when it carries none. */
export const versionOf = (item: Item, versionField: string): Version | null => itemVersionNumber(item[versionField]);

/** The text of a lossless-json `LosslessNumber` (`{ isLosslessNumber: true, value }`), or null. */
function losslessDigits(v: unknown): string | null {
  if (typeof v !== 'object' || v === null) return null;
  const o = v as { isLosslessNumber?: unknown; value?: unknown };
  return o.isLosslessNumber === true && typeof o.value === 'string' ? o.value.trim() : null;
}
