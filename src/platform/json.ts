/**
 * Lossless JSON for platform responses: integers beyond 2^53 (19-digit
 * ListDataIDs sent as JSON numbers) arrive as their exact digit strings; safe
 * integers and other numbers become JS numbers.
 *
 * The text goes to JSON.parse, once. Only when the result holds a number that
 * is an integer beyond 2^53 (which JSON.parse may have rounded; every such
 * token parses to one, so nothing is missed) are the exact digits put back:
 * one native regex pass over the text finds the long integer tokens in
 * document order, and one walk of the parsed value, in the same order,
 * replaces each rounded number with its token's digits. No second parse of
 * the page, no second tree of it in memory.
 *
 * The regex does not know about strings, so the walk checks that the tokens
 * and the rounded numbers pair up exactly (same count, each token rounding to
 * its number) and that no object has keys JSON.parse would reorder (integer
 * keys); when anything does not pair up, the page is parsed losslessly as a
 * whole (lossless-json, ~4x slower), which is always right.
 */
import { isInteger, isSafeNumber, parse } from 'lossless-json';

function parseNumber(text: string): number | string {
  if (isInteger(text) && !isSafeNumber(text)) return text;
  return Number(text);
}

/** Parses JSON text; throws SyntaxError on malformed input. */
export function parseJson(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  if (!holdsUnsafeInteger(value)) return value;
  return restoreLongIntegers(value, text) ? value : parse(text, null, parseNumber);
}

/** Whether a parsed JSON value holds, at any depth, a number that is an integer beyond 2^53. */
function holdsUnsafeInteger(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (isUnsafeInteger(v)) return true;
    } else if (Array.isArray(v)) {
      for (const x of v) if (typeof x === 'number' || (typeof x === 'object' && x !== null)) stack.push(x);
    } else if (typeof v === 'object' && v !== null) {
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (typeof x === 'number' || (typeof x === 'object' && x !== null)) stack.push(x);
      }
    }
  }
  return false;
}

function isUnsafeInteger(v: number): boolean {
  return Number.isInteger(v) && !Number.isSafeInteger(v);
}

/** An integer token of 16 or more digits where a JSON value may stand (after `:`, `,` or `[`, before `,`, `]` or `}`). */
const LONG_INTEGER_TOKEN = /[:,[]\s*(-?\d{16,})\s*(?=[,\]}])/g;

/**
 * Replaces, in place and in document order, every unsafe integer of `root` with the digits of
 * the matching token in `text`. False when they do not pair up (the caller parses losslessly).
 */
function restoreLongIntegers(root: unknown, text: string): boolean {
  if (typeof root !== 'object' || root === null) return false;
  const tokens: string[] = [];
  for (const m of text.matchAll(LONG_INTEGER_TOKEN)) {
    const digits = m[1]!;
    if (!Number.isSafeInteger(Number(digits))) tokens.push(digits);
  }
  let next = 0;
  /** The replacement for a number: its token's digits, or undefined when they do not pair up. */
  const take = (v: number): string | undefined => {
    const digits = tokens[next++];
    return digits !== undefined && Number(digits) === v ? digits : undefined;
  };
  const walk = (v: object): boolean => {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'number') {
          if (isUnsafeInteger(x)) {
            const digits = take(x);
            if (digits === undefined) return false;
            v[i] = digits;
          }
        } else if (typeof x === 'object' && x !== null && !walk(x)) return false;
      }
      return true;
    }
    const o = v as Record<string, unknown>;
    for (const k in o) {
      // JSON.parse puts integer keys first: the walk would no longer follow the text.
      const c = k.charCodeAt(0);
      if (c >= 48 && c <= 57) return false;
      const x = o[k];
      if (typeof x === 'number') {
        if (isUnsafeInteger(x)) {
          const digits = take(x);
          if (digits === undefined) return false;
          o[k] = digits;
        }
      } else if (typeof x === 'object' && x !== null && !walk(x)) return false;
    }
    return true;
  };
  return walk(root) && next === tokens.length;
}
