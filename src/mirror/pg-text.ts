/**
 * Text that Postgres must accept as is: array literals built by hand (a whole
 * batch travels as one text parameter per column, `unnest($n::type[])`,
 * without knex expanding JS arrays into lists of placeholders), and JSON that
 * jsonb can store.
 */

/** `{"a","b\"c",NULL}`: every element quoted and escaped; null → NULL. */
export function arrayLiteral(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else out += `"${NEEDS_ESCAPE.test(v) ? v.replace(ESCAPE_CHARS, '\\$&') : v}"`;
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPE_CHARS = /["\\]/g;

/**
 * JSON text (as JSON.stringify writes it) that jsonb accepts: jsonb refuses
 * `\u0000` and unpaired surrogates, which JSON.stringify writes as escapes;
 * they become U+FFFD. `changed` says whether anything was replaced.
 */
export function jsonbSafe(json: string): { json: string; changed: boolean } {
  // One scan for the common case: no \u escape at all (JSON.stringify writes one only for control characters and lone surrogates).
  if (!json.includes('\\u') || (!json.includes('\\u0000') && !/\\u[dD][89a-fA-F]/.test(json))) return { json, changed: false };
  // An escape counts only after an even number of backslashes ("\\u0000" is a backslash and "u0000").
  const out = json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/g, '$1\\ufffd');
  return { json: out, changed: out !== json };
}
