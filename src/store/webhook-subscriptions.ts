/**
 * `listsync.webhook_subscriptions`: the hooks listsync registered on the
 * platform, each with the secret token of its callback path.
 */
import type { Knex } from '../db.js';
import { INBOX_TABLE } from './webhook-inbox.js';

export const SUBSCRIPTIONS_TABLE = 'listsync.webhook_subscriptions';

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
export async function insertSubscription(db: Knex, s: { resource: string; channel: string; type: number; token: string; callbackUrl: string }): Promise<{ id: number; created_at: Date }> {
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
  return (await db(SUBSCRIPTIONS_TABLE).where({ token }).first('id', 'resource', 'channel', 'type', 'list_name')) as SubscriptionRow | undefined;
}

/** Every subscription with the events received for it and the last one's time, oldest first. */
export async function subscriptionsWithActivity(db: Knex): Promise<SubscriptionWithActivity[]> {
  return (await db(`${SUBSCRIPTIONS_TABLE} as s`)
    .leftJoin(`${INBOX_TABLE} as i`, 'i.subscription_id', 's.id')
    .groupBy('s.id')
    .orderBy('s.id')
    .select('s.*', db.raw('count(i.id)::bigint as events'), db.raw('max(i.received_at) as last_event_at'))) as SubscriptionWithActivity[];
}
