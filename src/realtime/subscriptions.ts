/**
 * A list's item event subscriptions: created-or-modified (3) and deleted (4),
 * each with its own secret callback token, kept in
 * `listsync.webhook_subscriptions` with `list_name` set. At most one per list
 * and event type (a unique index): `serve` calls `ensureItemSubscriptions` at
 * every start and reuses what is there; only a missing one (or one whose
 * callback base changed with `serve.publicUrl`) is made again.
 *
 * The row is written before the platform is asked, so a callback sent at once
 * already finds its token; if the platform refuses, the row is removed again.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { NotFoundError } from '../platform/errors.js';
import type { PlatformClient } from '../platform/client.js';
import { UsageError } from '../errors.js';
import {
  deleteSubscription,
  insertItemSubscription,
  itemSubscriptionOf,
  setPlatformId,
  subscribedItemTypes,
  subscriptionById,
  type StoredSubscription,
} from '../store/webhook-subscriptions.js';
import { callbackUrlFor, newToken } from '../webhooks/subscribe.js';

/** Event types the platform defines for list item hooks. */
export const ITEM_EVENT = { created: 1, modified: 2, createdOrModified: 3, deleted: 4 } as const;
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

/** Makes sure the list has one created-or-modified and one deleted subscription; reuses what is stored. */
export async function ensureItemSubscriptions(
  deps: Deps,
  list: ListConfig,
  options: { callbackUrl?: string } = {},
): Promise<ItemSubscription[]> {
  const out: ItemSubscription[] = [];
  for (const type of REALTIME_EVENT_TYPES) out.push(await ensureOne(deps, list, type, options.callbackUrl));
  return out;
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
    if (existing.platform_id !== null) {
      outcome = 'replaced';
      await unsubscribeOnPlatform(deps, existing);
    }
    await deleteSubscription(db, existing.id);
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

async function unsubscribeOnPlatform(deps: Deps, row: StoredSubscription): Promise<void> {
  const m = /^lists\/([^/]+)\/([^/]+)$/.exec(row.resource);
  if (!m || row.platform_id === null) return;
  try {
    await deps.client.unsubscribeItemHook(m[1]!, m[2]!, row.platform_id);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err; // already gone there
  }
}
