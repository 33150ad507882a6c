/**
 * One run per list and job family at a time, across processes: a Postgres
 * session advisory lock held on a dedicated connection for the whole run. A
 * killed process loses its connection, so its lock goes with it and the next
 * run can resume at once. The lock names live here too: every job of a list
 * shares one (`listLockName`).
 */
import type { Knex } from '../db.js';
import { LockedError } from '../errors.js';
import type { Job } from '../store/runs.js';

/** Name of the lock every job of a list shares: pull, backfill, push and reconcile never interleave. */
export const listLockName = (list: string): string => `list:${list}`;

/** The jobs that share a list's lock. */
export const LIST_JOBS = ['pull', 'backfill', 'push', 'reconcile'] as const satisfies readonly Job[];

export interface HeldLock {
  name: string;
  release(): Promise<void>;
}

interface PgConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** Tries to take `name`; waits up to `waitMs` (0 = fail at once with LockedError). */
export async function acquireLock(
  db: Knex,
  name: string,
  options: { waitMs?: number; describeHolder?: () => Promise<string | undefined> } = {},
): Promise<HeldLock> {
  const conn = (await db.client.acquireConnection()) as PgConnection;
  const key = `listsync:${name}`;
  const deadline = Date.now() + (options.waitMs ?? 0);
  try {
    for (;;) {
      const { rows } = await conn.query('select pg_try_advisory_lock(hashtextextended($1, 0)) as ok', [key]);
      if (rows[0]?.ok === true) break;
      if (Date.now() >= deadline) {
        const holder = options.describeHolder ? await options.describeHolder() : undefined;
        throw new LockedError(
          `${name} is already running (${holder ?? 'in another process'}); wait for it to finish, or pass --wait.`,
          name,
          holder,
        );
      }
      await new Promise((r) => setTimeout(r, Math.min(500, Math.max(50, deadline - Date.now()))));
    }
  } catch (err) {
    await db.client.releaseConnection(conn);
    throw err;
  }
  let released = false;
  return {
    name,
    async release() {
      if (released) return;
      released = true;
      try {
        await conn.query('select pg_advisory_unlock(hashtextextended($1, 0))', [key]);
      } finally {
        await db.client.releaseConnection(conn);
      }
    },
  };
}

/**
 * Runs fn while holding the lock. When fn fails, its error is the one thrown:
 * releasing on a connection that died with it (the database restarted) fails
 * too, and must not replace the real error. The lock went with the connection.
 */
export async function withLock<T>(db: Knex, name: string, options: Parameters<typeof acquireLock>[2], fn: () => Promise<T>): Promise<T> {
  const lock = await acquireLock(db, name, options);
  let result: T;
  try {
    result = await fn();
  } catch (err) {
    await lock.release().catch(() => undefined);
    throw err;
  }
  await lock.release();
  return result;
}
