/**
 * `listsync.webhook_unsubscribes`: item event subscriptions listsync made on
 * the platform and no longer uses, kept by platform ID until the platform
 * confirmed their removal.
 */
import type { Knex } from '../db.js';

export const UNSUBSCRIBES_TABLE = 'listsync.webhook_unsubscribes';

export interface RetiredSubscription {
  resource: string;
  platform_id: string;
  list_name: string | null;
  type: number | null;
  callback_url: string | null;
  attempts: number;
  last_error: string | null;
}

/** Records a platform subscription to remove (before it is asked to). */
export async function retireSubscription(
  db: Knex | Knex.Transaction,
  s: { resource: string; platformId: string; listName: string | null; type: number | null; callbackUrl: string | null },
): Promise<void> {
  await db(UNSUBSCRIBES_TABLE)
    .insert({ resource: s.resource, platform_id: s.platformId, list_name: s.listName, type: s.type, callback_url: s.callbackUrl })
    .onConflict(['resource', 'platform_id'])
    .ignore();
}

/** Subscriptions whose removal the platform has not confirmed yet, oldest first. */
export async function retiredSubscriptions(db: Knex): Promise<RetiredSubscription[]> {
  return (await db(UNSUBSCRIBES_TABLE)
    .orderBy('retired_at')
    .select('resource', 'platform_id', 'list_name', 'type', 'callback_url', 'attempts', 'last_error')) as RetiredSubscription[];
}

/** The platform confirmed the removal. */
export async function forgetRetired(db: Knex, resource: string, platformId: string): Promise<void> {
  await db(UNSUBSCRIBES_TABLE).where({ resource, platform_id: platformId }).delete();
}

/** A removal failed: kept for the next start, with why. */
export async function noteRetiredFailure(db: Knex, resource: string, platformId: string, error: string): Promise<void> {
  await db(UNSUBSCRIBES_TABLE)
    .where({ resource, platform_id: platformId })
    .update({ attempts: db.raw('attempts + 1'), last_error: error });
}
