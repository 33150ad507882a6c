/**
 * A list's item event subscriptions: created-or-modified (3) and deleted (4),
 * each with its own secret callback token, kept in
 * `listsync.webhook_subscriptions` with `list_name` set. At most one per list
 * and event type (a unique index): `serve` calls `ensureItemSubscriptions` at
 * every start and reuses what is there; only a missing one (or one whose
 * callback base changed with `serve.publicUrl`) is made again.
 *
 * Made once across processes: a list's subscriptions are checked and made
 * under a Postgres advisory lock, so replicas starting together never both
 * subscribe. A subscription replaced on the platform is first recorded in
 * `listsync.webhook_unsubscribes` (its platform ID), in the transaction that
 * drops its row, and forgotten only once the platform answered its removal;
 * every start tries again the removals left.
 *
 * The row is written before the platform is asked, so a callback sent at once
 * already finds its token; if the platform refuses, the row is removed again.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { isRefusalAnswer } from '../platform/item-lookup.js';
import type { PlatformClient } from '../platform/client.js';
import { coerceError, UsageError } from '../errors.js';
import { withLock } from '../sync/lock.js';
import {
  deleteSubscription,
  insertItemSubscription,
  itemSubscriptionOf,
  setPlatformId,
  subscribedItemTypes,
  subscriptionById,
  type StoredSubscription,
} from '../store/webhook-subscriptions.js';
import { forgetRetired, noteRetiredFailure, retiredSubscriptions, retireSubscription } from '../store/webhook-unsubscribes.js';
import { callbackUrlFor, newToken } from '../webhooks/subscribe.js';
import { ITEM_EVENT } from './item-events.js';

export { ITEM_EVENT };
/** What realtime subscribes per list. */
export const REALTIME_EVENT_TYPES = [ITEM_EVENT.createdOrModified, ITEM_EVENT.deleted] as const;
/** The Channel listsync subscribes item events with (checked on every callback). */
export const REALTIME_CHANNEL = 'listsync';

export interface ItemSubscription {
  id: number;
  listName: string;
  type: number;
  platformId: string | null;
  callbackUrl: string;
  /** reused: found in the database; created: subscribed now; replaced: the callback base had changed. */
  outcome: 'reused' | 'created' | 'replaced';
}

interface Deps {
  db: Knex;
  client: PlatformClient;
  config: Config;
}

export function itemResource(list: Pick<ListConfig, 'appID' | 'listID'>): string {
  return `lists/${list.appID}/${list.listID}`;
}

/** How long a start waits for another process checking the same list's subscriptions. */
const SUBSCRIBE_LOCK_WAIT_MS = 120_000;

/**
 * Makes sure the list has one created-or-modified and one deleted
 * subscription; reuses what is stored. Runs under the list's subscription
 * lock: a process starting at the same moment waits, then reuses these.
 */
export async function ensureItemSubscriptions(
  deps: Deps,
  list: ListConfig,
  options: { callbackUrl?: string } = {},
): Promise<ItemSubscription[]> {
  return withLock(deps.db, `item-subscriptions:${list.name}`, { waitMs: SUBSCRIBE_LOCK_WAIT_MS }, async () => {
    const out: ItemSubscription[] = [];
    for (const type of REALTIME_EVENT_TYPES) out.push(await ensureOne(deps, list, type, options.callbackUrl));
    return out;
  });
}

export interface RetiredRemoval {
  resource: string;
  platformId: string;
  /** Removed: the platform answered; left: it failed and is tried at the next start. */
  outcome: 'removed' | 'left';
  error?: string;
}

/**
 * Removes from the platform the item subscriptions listsync made and no
 * longer uses (kept in `listsync.webhook_unsubscribes`). A removal the
 * platform answers (done, or refused: it does not know the hook) is
 * forgotten; one that fails (5xx, transport) stays for the next start.
 */
export async function removeRetiredSubscriptions(deps: Deps): Promise<RetiredRemoval[]> {
  return withLock(deps.db, 'item-subscriptions:retired', { waitMs: SUBSCRIBE_LOCK_WAIT_MS }, async () => {
    const out: RetiredRemoval[] = [];
    for (const r of await retiredSubscriptions(deps.db)) {
      try {
        await unsubscribeOnPlatform(deps, { resource: r.resource, platform_id: r.platform_id });
        await forgetRetired(deps.db, r.resource, r.platform_id);
        out.push({ resource: r.resource, platformId: r.platform_id, outcome: 'removed' });
      } catch (err) {
        const error = coerceError(err).message;
        await noteRetiredFailure(deps.db, r.resource, r.platform_id, error);
        out.push({ resource: r.resource, platformId: r.platform_id, outcome: 'left', error });
      }
    }
    return out;
  });
}

async function ensureOne(deps: Deps, list: ListConfig, type: number, base: string | undefined): Promise<ItemSubscription> {
  const { db } = deps;
  const existing = await itemSubscriptionOf(db, list.name, type);
  const wantedBase = callbackUrlFor(deps.config, '', base);
  if (
    existing &&
    existing.platform_id !== null &&
    existing.callback_url.startsWith(wantedBase) &&
    existing.resource === itemResource(list)
  ) {
    return {
      id: Number(existing.id),
      listName: list.name,
      type,
      platformId: existing.platform_id,
      callbackUrl: existing.callback_url,
      outcome: 'reused',
    };
  }
  let outcome: ItemSubscription['outcome'] = 'created';
  if (existing) {
    // Half made (the process stopped before the platform answered), or made for another address or list.
    if (existing.platform_id !== null) outcome = 'replaced';
    await retireRow(db, existing);
  }
  const token = newToken();
  const callbackUrl = callbackUrlFor(deps.config, token, base);
  const id = await insertItemSubscription(db, {
    resource: itemResource(list),
    channel: REALTIME_CHANNEL,
    type,
    token,
    callbackUrl,
    listName: list.name,
  });
  if (id === undefined) {
    // Another process subscribed this list at the same moment: use its subscription.
    const other = (await itemSubscriptionOf(db, list.name, type))!;
    return {
      id: Number(other.id),
      listName: list.name,
      type,
      platformId: other.platform_id,
      callbackUrl: other.callback_url,
      outcome: 'reused',
    };
  }
  let platformId: string;
  try {
    ({ id: platformId } = await deps.client.subscribeItemHook(list.appID, list.listID, type, REALTIME_CHANNEL, callbackUrl));
  } catch (err) {
    await deleteSubscription(db, id);
    throw err;
  }
  await setPlatformId(db, id, platformId);
  return { id, listName: list.name, type, platformId, callbackUrl, outcome };
}

/** The lists with realtime whose subscriptions are not all in place (for /healthz). */
export async function listsMissingSubscriptions(db: Knex, config: Config): Promise<string[]> {
  const lists = config.lists.filter((l) => l.realtime);
  if (lists.length === 0) return [];
  const rows = await subscribedItemTypes(
    db,
    lists.map((l) => l.name),
  );
  return lists
    .filter((l) => !REALTIME_EVENT_TYPES.every((t) => rows.some((r) => r.list_name === l.name && r.type === t)))
    .map((l) => l.name);
}

export interface RemovedSubscription {
  id: number;
  resource: string;
  /** Whether the platform was asked to drop it (item event subscriptions). */
  unsubscribedOnPlatform: boolean;
}

/**
 * `listsync hooks remove ID`: drops a subscription here (its stored events go
 * with it) and, for a list's item events, on the platform too. The platform
 * has no documented way to drop a `workflow/tasks` subscription: its callbacks
 * are refused (404) from now on.
 */
export async function removeSubscription(deps: Deps, id: number): Promise<RemovedSubscription> {
  const row = await subscriptionById(deps.db, id);
  if (!row) throw new UsageError(`no webhook subscription with id ${id}; "listsync hooks list" shows them`);
  let onPlatform = false;
  if (row.list_name !== null && row.platform_id !== null) {
    await unsubscribeOnPlatform(deps, row);
    onPlatform = true;
  }
  await deleteSubscription(deps.db, id);
  return { id, resource: row.resource, unsubscribedOnPlatform: onPlatform };
}

/** Drops a stored subscription; one the platform holds is kept in `webhook_unsubscribes` (same transaction) until removed there. */
async function retireRow(db: Knex, row: StoredSubscription): Promise<void> {
  await db.transaction(async (trx) => {
    if (row.platform_id !== null)
      await retireSubscription(trx, {
        resource: row.resource,
        platformId: row.platform_id,
        listName: row.list_name,
        type: row.type,
        callbackUrl: row.callback_url,
      });
    await deleteSubscription(trx, row.id);
  });
}

/**
 * Asks the platform to drop an item subscription. An answer that refuses it
 * (any Status, a 4xx) means the platform does not hold it: done. A failure
 * that says nothing about it (5xx, transport, rate limit) is thrown.
 */
async function unsubscribeOnPlatform(deps: Deps, row: Pick<StoredSubscription, 'resource' | 'platform_id'>): Promise<void> {
  const m = /^lists\/([^/]+)\/([^/]+)$/.exec(row.resource);
  if (!m || row.platform_id === null) return;
  try {
    await deps.client.unsubscribeItemHook(m[1]!, m[2]!, row.platform_id);
  } catch (err) {
    if (!isRefusalAnswer(err)) throw err; // already gone there
  }
}
