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

/**
 * Each ID's presence: one `In` query per 1000 IDs, then a read by ID for each
 * ID the query did not return (a query may lag behind a create; a read by ID
 * does not). Errors that say nothing about an item are thrown.
 */
export async function lookUpItems(
  client: PlatformClient,
  ref: ItemListRef,
  ids: readonly string[],
  signal?: AbortSignal,
): Promise<Map<string, ItemPresence>> {
  const out = new Map<string, ItemPresence>();
  for (const item of await queryItemsByIds(client, ref, ids, { signal }))
    out.set(itemId(item[ref.idField]) ?? '', { kind: 'present', item });
  for (const id of ids) {
    if (out.has(id)) continue;
    if (!isPlatformId(id)) {
      out.set(id, { kind: 'gone', evidence: 'not an ID the platform can hold' });
      continue;
    }
    try {
      out.set(id, { kind: 'present', item: await client.getItem(ref.appID, ref.listID, id, signal) });
    } catch (err) {
      if (!isRefusalAnswer(err)) throw err;
      out.set(id, { kind: 'gone', evidence: `an In query returned no item and a read by ID was refused (${err.message})` });
    }
  }
  return out;
}
