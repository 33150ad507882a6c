/** One job per list at a time across processes, and a record of the runs that had to give way. */
import type { Knex } from '../db.js';
import { LockedError } from '../errors.js';
import { withLock } from './lock.js';
import { describeRunning, finishRun, startRun, type Job } from './runs.js';

/** Name of the lock every job of a list shares: pull, backfill, push and reconcile never interleave. */
export const listLockName = (list: string): string => `list:${list}`;

/**
 * Runs fn under the list's lock. When another run holds it, records a
 * 'skipped' run saying which, and rethrows the LockedError.
 */
export async function runExclusive<T>(db: Knex, listName: string, job: Job, waitMs: number, fn: () => Promise<T>): Promise<T> {
  try {
    return await withLock(db, listLockName(listName), { waitMs, describeHolder: () => describeRunning(db, listName, ['pull', 'backfill', 'push', 'reconcile']) }, fn);
  } catch (err) {
    if (err instanceof LockedError) {
      const runId = await startRun(db, listName, job);
      await finishRun(db, runId, 'skipped', { error: err.message });
    }
    throw err;
  }
}

