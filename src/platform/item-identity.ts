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
 * Tested over every encoding in platform/item-identity.test.ts.
 */

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

/** An item's RowVersion as a number, to compare versions (exact up to 2^53; versions start at 1 and grow by one). */
export function itemVersionNumber(raw: unknown): number | null {
  const v = itemVersion(raw);
  return v === null ? null : Number(v);
}

/** The text of a lossless-json `LosslessNumber` (`{ isLosslessNumber: true, value }`), or null. */
function losslessDigits(v: unknown): string | null {
  if (typeof v !== 'object' || v === null) return null;
  const o = v as { isLosslessNumber?: unknown; value?: unknown };
  return o.isLosslessNumber === true && typeof o.value === 'string' ? o.value.trim() : null;
}
