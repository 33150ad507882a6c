/**
 * Reading items by ID, and deciding that an item is gone.
 *
 * The platform's status codes are undocumented: one platform answers an
 * unknown item with HTTP 200 and Status 40400, another with HTTP 404, another
 * with HTTP 200 and some six-digit Status. So "gone" is never read off one
 * answer's code. An item is gone when both ways of asking agree:
 *   1. a read by ID (`GET .../items/{id}`) is refused with an answer (any
 *      non-zero Status or a 4xx; not a transport failure, a 5xx, a rate limit
 *      or an auth refusal, which say nothing about the item), and
 *   2. an `In` query for that ID returns no item.
 * Either way of asking that shows the item makes it present.
 */
import { coerceError } from '../errors.js';
import { AuthError, PlatformError, RateLimitError, TransportError } from './platform-errors.js';
import type { PlatformClient } from './client.js';
import { itemId } from './item-identity.js';
import { MAX_PAGE_SIZE } from './paging.js';
import { Operator, type Item } from './types.js';

/** Where items live and how their ID is spelled. */
export interface ItemListRef {
  appID: string;
  listID: string;
  idField: string;
}

export type ItemPresence = { kind: 'present'; item: Item } | { kind: 'gone'; evidence: string };

/** IDs the platform can hold: an In filter with anything else is refused. */
export const isPlatformId = (id: string): boolean => /^\d{1,20}$/.test(id);

/**
 * The items of `ids` as the platform's queries show them now: `In` queries of
 * up to 1000 IDs (only platform-shaped IDs are asked), all fields or `fields`.
 */
export async function queryItemsByIds(
  client: PlatformClient,
  ref: ItemListRef,
  ids: readonly string[],
  options: { fields?: string[]; signal?: AbortSignal } = {},
): Promise<Item[]> {
  const lookup = ids.filter(isPlatformId);
  const out: Item[] = [];
  for (let i = 0; i < lookup.length; i += MAX_PAGE_SIZE) {
    const chunk = lookup.slice(i, i + MAX_PAGE_SIZE);
    const { items } = await client.queryItems(
      ref.appID,
      ref.listID,
      {
        ...(options.fields ? { Fields: options.fields } : {}),
        Filters: [{ Field: ref.idField, Type: Operator.In, Value: JSON.stringify(chunk) }],
        PageIndex: 1,
        PageSize: MAX_PAGE_SIZE,
      },
      options.signal,
    );
    for (const item of items) out.push(item);
  }
  return out;
}

/**
 * True when the platform answered and refused: what a read of an unknown item
 * gets on any platform. Transport failures, 5xx, rate limits and auth
 * refusals are not refusals of the item.
 */
export function isRefusalAnswer(err: unknown): err is PlatformError {
  if (!(err instanceof PlatformError) || err instanceof TransportError) return false;
  if (err instanceof RateLimitError || err instanceof AuthError) return false;
  return err.httpStatus === undefined || err.httpStatus < 500;
}

/**
 * The item as it is now, or `gone` when a read by ID is refused and an `In`
 * query does not return it. Errors that say nothing about the item
 * (transport, 5xx, rate limit, auth) are thrown.
 */
export async function readItemOrGone(client: PlatformClient, ref: ItemListRef, id: string, signal?: AbortSignal): Promise<ItemPresence> {
  let refusal: PlatformError;
  try {
    return { kind: 'present', item: await client.getItem(ref.appID, ref.listID, id, signal) };
  } catch (err) {
    if (!isRefusalAnswer(err)) throw err;
    refusal = err;
  }
  return (await confirmAbsent(client, ref, new Map([[id, refusal]]), signal)).get(id)!;
}

/**
 * For IDs whose read by ID was refused (`refusals`: ID -> the refusal), one
 * `In` query settles each: returned → present, not returned → gone.
 */
export async function confirmAbsent(
  client: PlatformClient,
  ref: ItemListRef,
  refusals: ReadonlyMap<string, PlatformError>,
  signal?: AbortSignal,
): Promise<Map<string, ItemPresence>> {
  const found = new Map<string, Item>();
  for (const item of await queryItemsByIds(client, ref, [...refusals.keys()], { signal })) found.set(itemId(item[ref.idField]) ?? '', item);
  const out = new Map<string, ItemPresence>();
  for (const [id, refusal] of refusals) {
    const item = found.get(id);
    out.set(
      id,
      item
        ? { kind: 'present', item }
        : { kind: 'gone', evidence: `a read by ID was refused (${refusal.message}) and an In query returned no item` },
    );
  }
  return out;
}

/** What a look-up learned of one ID: the item (`byId`: as a read by ID showed it), gone, or nothing (its read by ID failed). */
export type LookedUp =
  { kind: 'present'; item: Item; byId: boolean } | { kind: 'gone'; evidence: string } | { kind: 'unanswered'; error: Error };

export interface LookUpOptions {
  signal?: AbortSignal;
  /** IDs asked by ID only: a query may lag behind the version they wait for. */
  byIdOnly?: ReadonlySet<string>;
  /** IDs asked by ID even when the query returns them: a delete the query may lag behind. */
  alsoById?: ReadonlySet<string>;
}

export interface LookUpResult {
  items: Map<string, LookedUp>;
  /** Requests sent. */
  requests: number;
  /** IDs looked up, once for each way of asking. */
  asked: number;
}

const inQueries = (ids: readonly string[]): number => Math.ceil(ids.filter(isPlatformId).length / MAX_PAGE_SIZE);

/**
 * Each ID's presence: one `In` query per 1000 IDs, then a read by ID for each
 * ID the query did not return (a query may lag behind a create; a read by ID
 * does not), and for `byIdOnly` and `alsoById`. Gone is the one rule above:
 * refused by ID and absent from an `In` answer (asked once more for an ID the
 * first query showed or did not ask). A read by ID that fails otherwise
 * (transport, 5xx, rate limit, auth) leaves that ID `unanswered`; a failing
 * query is thrown.
 */
export async function lookUpItems(
  client: PlatformClient,
  ref: ItemListRef,
  ids: readonly string[],
  options: LookUpOptions = {},
): Promise<LookUpResult> {
  const byIdOnly = options.byIdOnly ?? new Set<string>();
  const queried = ids.filter((id) => !byIdOnly.has(id));
  const fromQuery = new Map<string, Item>();
  for (const item of await queryItemsByIds(client, ref, queried, { signal: options.signal })) {
    const id = itemId(item[ref.idField]);
    if (id !== null) fromQuery.set(id, item);
  }
  const out: LookUpResult = { items: new Map(), requests: inQueries(queried), asked: queried.length };
  for (const [id, item] of fromQuery) out.items.set(id, { kind: 'present', item, byId: false });
  const askById = ids.filter((id) => byIdOnly.has(id) || !fromQuery.has(id) || options.alsoById?.has(id));
  const refused = await readEachById(client, ref, askById, out, options.signal);
  const unconfirmed = new Map<string, PlatformError>();
  for (const [id, refusal] of refused) {
    if (byIdOnly.has(id) || fromQuery.has(id)) unconfirmed.set(id, refusal);
    else out.items.set(id, { kind: 'gone', evidence: `an In query returned no item and a read by ID was refused (${refusal.message})` });
  }
  if (unconfirmed.size === 0) return out;
  out.requests += inQueries([...unconfirmed.keys()]);
  for (const [id, presence] of await confirmAbsent(client, ref, unconfirmed, options.signal))
    out.items.set(id, presence.kind === 'present' ? { ...presence, byId: false } : presence);
  return out;
}

/** Reads each ID by ID into `out`; returns the refusals, whose IDs `out` no longer holds. */
async function readEachById(
  client: PlatformClient,
  ref: ItemListRef,
  ids: readonly string[],
  out: LookUpResult,
  signal?: AbortSignal,
): Promise<Map<string, PlatformError>> {
  const refused = new Map<string, PlatformError>();
  for (const id of ids) {
    out.asked++;
    if (!isPlatformId(id)) {
      out.items.set(id, { kind: 'gone', evidence: 'not an ID the platform can hold' });
      continue;
    }
    out.requests++;
    try {
      out.items.set(id, { kind: 'present', item: await client.getItem(ref.appID, ref.listID, id, signal), byId: true });
    } catch (err) {
      if (isRefusalAnswer(err)) {
        out.items.delete(id);
        refused.set(id, err);
      } else out.items.set(id, { kind: 'unanswered', error: coerceError(err) });
    }
  }
  return refused;
}
