/**
 * `listsync.leases`: named claims with an expiry. `serve` replicas elect one
 * runner per scheduled fire by inserting the fire's key first.
 */
import type { Knex } from '../db.js';

export const LEASES_TABLE = 'listsync.leases';

/** Claims `name` for `holder` for `ttlSeconds`; true when this call inserted it (nobody held it). */
export async function claimLease(db: Knex, name: string, holder: string, ttlSeconds: number): Promise<boolean> {
  const rows = await db(LEASES_TABLE)
    .insert({ name, holder, expires_at: db.raw('now() + make_interval(secs => ?)', [ttlSeconds]) })
    .onConflict('name')
    .ignore()
    .returning('name');
  return rows.length === 1;
}

/** Removes the leases named `prefix…` that expired over a day ago. */
export async function deleteStaleLeases(db: Knex, prefix: string): Promise<void> {
  await db(LEASES_TABLE).where('name', 'like', `${prefix}%`).where('expires_at', '<', db.raw("now() - interval '1 day'")).delete();
}
