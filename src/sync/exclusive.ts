/** One job per list at a time across processes (see run-job.ts, which takes the lock). */
import type { Job } from '../store/runs.js';

/** Name of the lock every job of a list shares: pull, backfill, push and reconcile never interleave. */
export const listLockName = (list: string): string => `list:${list}`;

/** The jobs that share a list's lock. */
export const LIST_JOBS = ['pull', 'backfill', 'push', 'reconcile'] as const satisfies readonly Job[];
