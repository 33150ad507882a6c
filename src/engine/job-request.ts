/**
 * A job as serve's scheduler, the CLI's `--queue` and the console ask for it:
 * its payload (account, scope, the account's cap) and how it is sent (lease,
 * retries with backoff), from the config, the same wherever it is asked for.
 */
import type { Config } from '../config.js';
import { accountNamed } from '../accounts.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { startBoss } from './boss.js';
import { createEnqueuer, type SendOptions } from './enqueue.js';
import { accountNameOf, fireInstant, jobScope, leaseSecondsOf, type JobKind, type JobOrigin, type JobPayload } from './job-payload.js';

/** Seconds before the first retry of a failed job; each next one waits twice as long (pg-boss's backoff). */
export const RETRY_DELAY_SECONDS = 10;

/** The account's `platform.maxConcurrentJobs`: jobs of one account running at once across workers (0 = no cap). */
export function accountCapOf(config: Config, account: string): number {
  return accountNamed(config, account).platform.maxConcurrentJobs;
}

export function payloadFor(
  config: Config,
  job: JobKind,
  list: { name: string } | undefined,
  origin: JobOrigin,
  at: Date,
  from?: string,
): JobPayload {
  const account = accountNameOf(config, list);
  return {
    job,
    ...(list ? { list: list.name } : {}),
    account,
    origin,
    firedAt: fireInstant(at),
    ...(from ? { from } : {}),
    scope: jobScope(job, list?.name),
    accountCap: accountCapOf(config, account),
  };
}

export function sendOptionsFor(config: Config): (p: JobPayload) => SendOptions {
  return (p) => ({
    leaseSeconds: leaseSecondsOf(p.job, config.serve.jobLeaseSeconds),
    retryLimit: config.serve.jobRetries,
    retryDelaySeconds: RETRY_DELAY_SECONDS,
  });
}

/** Queues jobs for serve's workers from outside serve (no supervision); resolves with their ids, in order. */
export async function queueJobs(
  deps: { db: Knex; config: Config; logger: Logger },
  asked: readonly { job: JobKind; list?: { name: string }; from?: string }[],
): Promise<string[]> {
  const boss = await startBoss(deps.db, { supervise: false, logger: deps.logger });
  try {
    const enqueuer = createEnqueuer(boss, deps.db, sendOptionsFor(deps.config));
    const ids: string[] = [];
    for (const a of asked) ids.push(await enqueuer.request(payloadFor(deps.config, a.job, a.list, 'operator', new Date(), a.from)));
    return ids;
  } finally {
    await boss.stop({ graceful: false });
  }
}
