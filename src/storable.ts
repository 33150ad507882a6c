/**
 * Text PostgreSQL cannot store, stored anyway and given back exactly.
 *
 * PostgreSQL's text and jsonb refuse NUL (U+0000), and UTF-8 has no form for
 * a lone UTF-16 surrogate (half of an emoji cut in two), which JavaScript
 * strings and JSON can carry. listsync keeps such a string in `_raw` (and in
 * its own tables: display names, field names, titles) **escaped**, reversibly:
 *
 * - the stored string starts with U+0010 (DLE, "data link escape"), which
 *   marks it as escaped;
 * - after the mark, `\` is written `\\`, NUL is written `\0`, and a lone
 *   surrogate is written `\uD83D` (its code unit, 4 hex digits);
 * - a string that itself starts with U+0010 is escaped too, so every string
 *   that starts with the mark is an escaped one.
 *
 * In JSON (what `_raw::text` shows) the mark reads `\u0010`: the platform's
 * `"a\u0000b"` is kept as `"\u0010a\\0b"`. `decodeStorable` undoes it.
 * Strings without NUL, lone surrogates or the mark (all but a handful) are
 * stored as they are; in SQL, `left(_raw->>'Text1', 1) = chr(16)` finds the
 * escaped ones.
 *
 * Typed columns get the closest text PostgreSQL can hold (`closestText`:
 * NUL and lone surrogates become U+FFFD), and the run counts them.
 */

/** Marks a stored string as escaped. */
export const STORABLE_MARK = '\u0010';

/** NUL, any surrogate, or the mark: what may need a closer look (a quick test before the exact one). */
// eslint-disable-next-line no-control-regex
const SUSPECT = /[\u0000\u0010\ud800-\udfff]/;
/** NUL or a surrogate that is not half of a pair. */
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// eslint-disable-next-line no-control-regex
const ESCAPED_CHARS = /\\|\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// eslint-disable-next-line no-control-regex
const UNSTORABLE_ALL = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Whether PostgreSQL text can hold `s` as it is (no NUL, no lone surrogate). */
export function isStorable(s: string): boolean {
  return !SUSPECT.test(s) || !UNSTORABLE.test(s);
}

/** Whether `s` must be escaped to be stored and given back exactly. */
export function needsEscape(s: string): boolean {
  return SUSPECT.test(s) && (s.startsWith(STORABLE_MARK) || UNSTORABLE.test(s));
}

/** `s` as stored: as it is when storable and unmarked, else the mark and the escaped text. */
export function escapeStorable(s: string): string {
  if (!needsEscape(s)) return s;
  return (
    STORABLE_MARK +
    s.replace(ESCAPED_CHARS, (c) =>
      c === '\\' ? '\\\\' : c === '\u0000' ? '\\0' : `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`,
    )
  );
}

/** The string `escapeStorable` was given. */
export function unescapeStorable(s: string): string {
  if (!s.startsWith(STORABLE_MARK)) return s;
  return s
    .slice(1)
    .replace(/\\(\\|0|u[0-9A-Fa-f]{4})/g, (_m, e: string) =>
      e === '\\' ? '\\' : e === '0' ? '\u0000' : String.fromCharCode(parseInt(e.slice(1), 16)),
    );
}

/** Whether any string (or object key) in a JSON-like value needs escaping. */
export function hasUnstorable(value: unknown): boolean {
  if (typeof value === 'string') return needsEscape(value);
  if (Array.isArray(value)) return value.some(hasUnstorable);
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (needsEscape(k) || hasUnstorable(v)) return true;
  }
  return false;
}

/** A JSON-like value with every string and object key escaped where needed (`escapeStorable`). */
export function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return escapeStorable(value);
  if (Array.isArray(value)) return value.map(storableValue);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[escapeStorable(k)] = storableValue(v);
    return out;
  }
  return value;
}

/** The value `storableValue` was given (strings and keys unescaped). */
export function decodeStorable(value: unknown): unknown {
  if (typeof value === 'string') return unescapeStorable(value);
  if (Array.isArray(value)) return value.map(decodeStorable);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[unescapeStorable(k)] = decodeStorable(v);
    return out;
  }
  return value;
}

/** A value's JSON text for a jsonb column: strings PostgreSQL cannot hold escaped (`storableValue`), BigInts as digits. */
export function storableJson(value: unknown): string {
  const replacer = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : v);
  return JSON.stringify(hasUnstorable(value) ? storableValue(value) : value, replacer);
}

/** The closest text PostgreSQL can hold: NUL and lone surrogates become U+FFFD. */
export function closestText(s: string): string {
  return isStorable(s) ? s : s.replace(UNSTORABLE_ALL, '\ufffd');
}
