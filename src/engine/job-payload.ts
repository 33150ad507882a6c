/**
 * What a job on the engine's queue carries (its `data`), and the names it is
 * found by. A job's singleton key names its kind and target (`pull:orders`,
 * `users`): the queue is `stately`, so one key has at most one job queued and
 * one running, whichever worker or replica sent it. Its scope names what may
 * never run twice at once (a list's jobs share the list's lock): a worker
 * takes no job whose scope has a job running (src/engine/job-rows.ts).
 */
import type { Config } from '../config.js';

export type JobKind = 'pull' | 'push' | 'reconcile' | 'reconcile-full' | 'users' | 'directory' | 'backfill';

/** Why a job exists: a cron fire, an early pull asked for (webhooks, real time), or an operator (CLI, console). */
export type JobOrigin = 'schedule' | 'request' | 'now' | 'operator';

export interface JobPayload {
  job: JobKind;
  /** The list of a per-list job. */
  list?: string;
  /** The account the job's requests count against (`accountNameOf`). */
  account: string;
  origin: JobOrigin;
  /** When it was asked for (a cron fire's own instant, to the second: the same on every replica). */
  firedAt: string;
  /** A backfill's first day (yyyy-mm-dd). */
  from?: string;
  /** A job that found its list busy or its account at its cap waits this long, then is taken again. */
  scope: string;
  /** At most this many jobs of the account run at once, across workers (`platform.maxConcurrentJobs`; 0 = no cap). */
  accountCap: number;
}

/** The key coalescing compares: kind and target. */
export const jobKey = (job: JobKind, list?: string): string => (list === undefined ? job : `${job}:${list}`);

/** What may not run twice at once: a list's jobs, or a directory job itself. */
export const jobScope = (job: JobKind, list?: string): string => (list === undefined ? job : `list:${list}`);

/**
 * The account a job's requests count against: its list's (`accounts: [...]` in the config), the
 * first account for the users and directory jobs, and for a list this config does not know.
 */
export function accountNameOf(config: Pick<Config, 'accounts' | 'lists'>, list?: { name: string }): string {
  const known = list ? config.lists.find((l) => l.name === list.name) : undefined;
  return known?.account ?? config.accounts[0]!.name;
}

/**
 * How long a job may go without its worker's heartbeat before the queue
 * hands it to another worker: the worker renews it every third of this, so a
 * live run of any length keeps it, and a dead worker's job is taken over
 * within this plus the queue's supervision interval.
 */
export function leaseSecondsOf(job: JobKind, base: number): number {
  return job === 'push' || job === 'users' || job === 'directory' ? base : base * 2;
}

/** A cron fire's instant to the second, so replicas firing the same minute name the same fire. */
export const fireInstant = (at: Date): string => new Date(Math.round(at.getTime() / 1000) * 1000).toISOString();
