/**
 * The connections serve's runs hold their advisory locks on: a pool of its
 * own beside the work pool, one connection per worker, so a run holding its
 * lock never waits for the work pool with it, and waiting never holds the
 * work pool. Same database and credentials as the work pool (a lock is per
 * database); when the database is away an acquire gives up after
 * `acquireTimeoutMs` instead of the work pool's 30 s (test/serve-capacity.test.ts,
 * "many lists on a small pool" and "the database refusing connections").
 */
import knexFactory from 'knex';
import type { Knex } from '../db.js';

export function createLockPool(db: Knex, workers: number, acquireTimeoutMs = 5000): Knex {
  const base = db.client.config as Knex.Config;
  const connection = base.connection;
  return knexFactory({
    ...base,
    connection:
      typeof connection === 'object' && connection !== null && !('then' in connection)
        ? { ...connection, application_name: 'listsync-locks' }
        : connection,
    pool: { min: 0, max: workers },
    acquireConnectionTimeout: acquireTimeoutMs,
  });
}
