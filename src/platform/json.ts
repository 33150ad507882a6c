/**
 * Lossless JSON for platform responses: integers beyond 2^53 (19-digit
 * ListDataIDs sent as JSON numbers) arrive as their exact digit strings; safe
 * integers and other numbers become JS numbers.
 *
 * lossless-json is ~4x slower than JSON.parse on a 1000-item page, so the
 * text goes to JSON.parse first, and only when the result holds a number
 * that is an integer beyond 2^53 (which JSON.parse may have rounded) is it
 * parsed again losslessly. Every integer token beyond 2^53 parses to such a
 * number, so nothing is missed; looking through the parsed values costs
 * ~0.1 ms a page, where scanning the text for long digit runs cost ~0.7 ms.
 */
import { isInteger, isSafeNumber, parse } from 'lossless-json';

function parseNumber(text: string): number | string {
  if (isInteger(text) && !isSafeNumber(text)) return text;
  return Number(text);
}

/** Parses JSON text; throws SyntaxError on malformed input. */
export function parseJson(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  return holdsUnsafeInteger(value) ? parse(text, null, parseNumber) : value;
}

/** Whether a parsed JSON value holds, at any depth, a number that is an integer beyond 2^53. */
function holdsUnsafeInteger(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (Number.isInteger(v) && !Number.isSafeInteger(v)) return true;
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
