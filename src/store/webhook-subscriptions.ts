/**
 * `listsync.webhook_subscriptions`: the hooks listsync registered on the
 * platform, each with the secret token of its callback path.
 */
import type { Knex } from '../db.js';
import { INBOX_TABLE, SUBSCRIPTIONS_TABLE } from './webhook-tables.js';

/** What the receiver checks a delivery against. */
export interface SubscriptionRow {
  id: number;
  resource: string;
  channel: string;
  type: number;
  /** Set for a list's item event subscription. */
  list_name: string | null;
}

export interface SubscriptionWithActivity {
  id: number;
  platform_id: string | null;
  resource: string;
  channel: string;
  type: number;
  token: string;
  callback_url: string;
  created_at: Date;
  list_name: string | null;
  events: number;
  last_event_at: Date | null;
}

/** Inserts a subscription before the platform knows it (its platform id comes later). */
export async function insertSubscription(
  db: Knex,
  s: { resource: string; channel: string; type: number; token: string; callbackUrl: string },
): Promise<{ id: number; created_at: Date }> {
  const [row] = (await db(SUBSCRIPTIONS_TABLE)
    .insert({ resource: s.resource, channel: s.channel, type: s.type, token: s.token, callback_url: s.callbackUrl })
    .returning(['id', 'created_at'])) as { id: number; created_at: Date }[];
  return row!;
}

export async function deleteSubscription(db: Knex, id: number): Promise<void> {
  await db(SUBSCRIPTIONS_TABLE).where({ id }).delete();
}

export async function setPlatformId(db: Knex, id: number, platformId: string): Promise<void> {
  await db(SUBSCRIPTIONS_TABLE).where({ id }).update({ platform_id: platformId });
}

export async function subscriptionByToken(db: Knex, token: string): Promise<SubscriptionRow | undefined> {
  return (await db(SUBSCRIPTIONS_TABLE).where({ token }).first('id', 'resource', 'channel', 'type', 'list_name')) as
    SubscriptionRow | undefined;
}

/** Every subscription with the events received for it and the last one's time, oldest first. */
export async function subscriptionsWithActivity(db: Knex): Promise<SubscriptionWithActivity[]> {
  return (await db(`${SUBSCRIPTIONS_TABLE} as s`)
    .leftJoin(`${INBOX_TABLE} as i`, 'i.subscription_id', 's.id')
    .groupBy('s.id')
    .orderBy('s.id')
    .select('s.*', db.raw('count(i.id)::bigint as events'), db.raw('max(i.received_at) as last_event_at'))) as SubscriptionWithActivity[];
}

/** Lists with an item event subscription of their own. */
export async function listsWithItemSubscriptions(db: Knex): Promise<string[]> {
  const rows = (await db(SUBSCRIPTIONS_TABLE).whereNotNull('list_name').distinct('list_name')) as { list_name: string }[];
  return rows.map((r) => r.list_name);
}

/** Per list among `names`: item events received for its subscriptions, and those not applied yet. */
export async function itemEventCounts(
  db: Knex,
  names: readonly string[],
): Promise<{ list_name: string; received: string; queued: string }[]> {
  return (await db(`${SUBSCRIPTIONS_TABLE} as s`)
    .leftJoin(`${INBOX_TABLE} as i`, 'i.subscription_id', 's.id')
    .whereIn('s.list_name', [...names])
    .groupBy('s.list_name')
    .select(
      's.list_name',
      db.raw('count(i.id)::bigint as received'),
      db.raw('count(i.id) filter (where i.processed_at is null)::bigint as queued'),
    )) as {
    list_name: string;
    received: string;
    queued: string;
  }[];
}

/** A subscription's whole row. */
export interface StoredSubscription {
  id: number;
  platform_id: string | null;
  resource: string;
  channel: string;
  type: number;
  token: string;
  callback_url: string;
  list_name: string | null;
}

export async function subscriptionById(db: Knex, id: number): Promise<StoredSubscription | undefined> {
  return (await db(SUBSCRIPTIONS_TABLE).where({ id }).first()) as StoredSubscription | undefined;
}

/** The list's own subscription to one item event type, if stored. */
export async function itemSubscriptionOf(db: Knex, listName: string, type: number): Promise<StoredSubscription | undefined> {
  return (await db(SUBSCRIPTIONS_TABLE).where({ list_name: listName, type }).first()) as StoredSubscription | undefined;
}

/** Inserts a list's item event subscription; undefined when the list already has one of that type (another process was first). */
export async function insertItemSubscription(
  db: Knex,
  s: { resource: string; channel: string; type: number; token: string; callbackUrl: string; listName: string },
): Promise<number | undefined> {
  const inserted = (await db(SUBSCRIPTIONS_TABLE)
    .insert({ resource: s.resource, channel: s.channel, type: s.type, token: s.token, callback_url: s.callbackUrl, list_name: s.listName })
    .onConflict(db.raw('(list_name, type) where list_name is not null'))
    .ignore()
    .returning(['id'])) as { id: number }[];
  return inserted.length === 0 ? undefined : Number(inserted[0]!.id);
}

/** The item event types each of `listNames` is subscribed to on the platform. */
export async function subscribedItemTypes(db: Knex, listNames: readonly string[]): Promise<{ list_name: string; type: number }[]> {
  return (await db(SUBSCRIPTIONS_TABLE)
    .whereIn('list_name', [...listNames])
    .whereNotNull('platform_id')
    .select('list_name', 'type')) as { list_name: string; type: number }[];
}
