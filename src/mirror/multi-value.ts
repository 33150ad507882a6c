/**
 * A multi-value field's wire value, built from the exact elements the platform
 * holds (test/sync/exact-values.test.ts).
 *
 * The platform keeps a checkbox or multi lookup as a JSON array inside a
 * string, its IDs as strings or as bare numbers (`[1177823559771361293]`);
 * which one is not documented. An edit of the `text[]` column is written back
 * in the form the item had: an element the item holds keeps its form (a bare
 * number stays bare, a string stays a string), a new integer element is bare
 * when every element of the item was, and anything else is a string.
 *
 * An element that stands in place of one the item holds as its rounded copy
 * (its digits as a double writes them: read so by an older listsync) cannot
 * be written back exactly: `InexactElementError`, and the change is refused
 * with its message. Only then: the held element must be missing from the
 * edit. An element added beside the exact held ones is the user's, sent as
 * written (dense 19-digit IDs make an ID equal to a neighbour's rounded form
 * an ordinary edit: test/sync/exact-values.test.ts).
 */
import { parse as parseLossless, isLosslessNumber } from 'lossless-json';
import { plainDecimal } from './convert.js';

export class InexactElementError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InexactElementError';
  }
}

interface HeldElement {
  text: string;
  bare: boolean;
}

/** The elements of the item's current value (`_raw`'s string), with their form; [] when it is not a JSON array. */
export function heldElements(raw: unknown): HeldElement[] {
  if (typeof raw !== 'string' || !raw.trim().startsWith('[')) return [];
  let parsed: unknown;
  try {
    parsed = parseLossless(raw);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const out: HeldElement[] = [];
  for (const el of parsed as unknown[]) {
    if (isLosslessNumber(el)) out.push({ text: el.value, bare: true });
    else if (typeof el === 'string') out.push({ text: el, bare: false });
    else if (typeof el === 'boolean') out.push({ text: String(el), bare: true });
  }
  return out;
}

const INTEGER = /^-?(0|[1-9]\d*)$/;

/** The JSON array text to send for `elements`, in the form the item's current value `raw` has. */
export function multiValueWire(elements: readonly string[], raw: unknown): string {
  const held = heldElements(raw);
  const forms = new Map(held.map((h) => [h.text, h.bare]));
  const allBare = held.length > 0 && held.every((h) => h.bare);
  const parts = elements.map((e) => {
    const form = forms.get(e);
    if (form === undefined) assertNotRounded(e, held, elements);
    const bare = form ?? (allBare && INTEGER.test(e));
    return bare && INTEGER.test(e) ? e : JSON.stringify(e);
  });
  return `[${parts.join(',')}]`;
}

/**
 * Throws when `e` is not one of the item's elements but what one of them,
 * missing from the edit (`elements`), becomes when read through a double and
 * written out again (`1177823559771361293` → `1177823559771361300`): a
 * rounded copy standing in its place.
 */
function assertNotRounded(e: string, held: readonly HeldElement[], elements: readonly string[]): void {
  if (!INTEGER.test(e) || e.replace('-', '').length < 16) return;
  const twin = held.find(
    (h) => h.text !== e && INTEGER.test(h.text) && !elements.includes(h.text) && plainDecimal(String(Number(h.text))) === e,
  );
  if (twin)
    throw new InexactElementError(
      `element ${e} is not exact: the platform holds ${twin.text}, and ${e} is that number rounded (read by an older listsync); the change was refused rather than sent. Pull the list again ("listsync pull") and repeat the edit.`,
    );
}
