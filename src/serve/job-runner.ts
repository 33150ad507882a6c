/**
 * What a worker does with a job it took from the queue: finds the job's
 * definition and list in this process's config, runs it with its lock on the
 * lock pool (the per-list advisory lock: one run of a list at a time whatever
 * the queue does), accounts for its outcome (run-outcomes.ts), and says how
 * the job ends on the queue:
 * - done, with the run's status as output;
 * - handed back when shutdown stopped it (the next worker resumes from its
 *   checkpoint), when its list was busy (in a few seconds), or when it never
 *   started because shutdown began;
 * - failed, retried while the failure passes by itself and retries are left
 *   (src/engine/retry-rule.ts), counted as a retry when taken again.
 */
import { secretsOf, type Config, type ListConfig } from '../config.js';
import { configForList } from '../accounts.js';
import { explainDatabaseError, type Knex } from '../db.js';
import { LockedError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { scrubSecrets } from '../secrets.js';
import { DIRECTORY_JOB_LIST } from '../sync/directory-sync.js';
import { runInFire, type FireScope } from '../sync/fire-scope.js';
import { USERS_JOB_LIST } from '../sync/users.js';
import type { Job } from '../store/runs.js';
import { jobKey, type JobPayload } from '../engine/job-payload.js';
import type { TakenJob } from '../engine/job-rows.js';
import { isTransient } from '../engine/retry-rule.js';
import type { JobEnd } from '../engine/worker.js';
import type { JobDefinition } from './job-definition.js';
import { describeFailure, type FireOutcome, type RunOutcomes } from './run-outcomes.js';
import type { RunTracker } from './shutdown.js';

/** A job whose list is busy is taken again after this long. */
const BUSY_DELAY_SECONDS = 5;

export interface JobRunnerOptions {
  config: Config;
  db: Knex;
  lockDb: Knex;
  client: PlatformClient;
  /** The client of a list's account (default: `client` for every list). */
  clientFor?: (list: ListConfig) => PlatformClient;
  logger: Logger;
  jobs: readonly JobDefinition[];
  runs: RunTracker;
  outcomes: RunOutcomes;
  /** The `sync_runs` rows of runs under way. */
  open: Set<FireScope>;
  /** A job taken again after a failure (`takenOver`: its worker died). */
  onRetry?(job: TakenJob, takenOver: boolean): void;
  /** A job started: seconds from when it was asked for. */
  onStart?(payload: JobPayload, waitedSeconds: number): void;
}

export interface Target {
  job: JobDefinition;
  list?: ListConfig;
}

/** The list and job a target's runs are recorded under in `sync_runs`. */
export function recordedAs({ job, list }: Target): { list: string; job: Job } {
  const recorded: Job = job.name === 'reconcile-full' ? 'reconcile' : job.name;
  if (list) return { list: list.name, job: recorded };
  return { list: job.name === 'directory' ? DIRECTORY_JOB_LIST : USERS_JOB_LIST, job: recorded };
}

export function createJobRunner(opts: JobRunnerOptions): (taken: TakenJob) => Promise<JobEnd> {
  const { config, logger, runs, outcomes } = opts;

  function targetOf(p: JobPayload): Target | string {
    const job = opts.jobs.find((j) => j.name === p.job);
    if (!job) return `this worker runs no job named ${p.job}`;
    if (!job.perList) return { job };
    const list = config.lists.find((l) => l.name === p.list);
    return list ? { job, list } : `no list named "${p.list}" in this worker's config; give every serve the same config`;
  }

  return async (taken) => {
    const p = taken.data;
    if (runs.signal.aborted) return { kind: 'handBack', delaySeconds: 0, why: 'shutdown before it started' };
    const target = targetOf(p);
    if (typeof target === 'string') return { kind: 'failed', message: target, retry: false };
    if (taken.retryCount > 0) opts.onRetry?.(taken, /timeout/.test(taken.output?.value?.message ?? taken.output?.message ?? ''));
    opts.onStart?.(p, Math.max(0, (Date.now() - Date.parse(p.firedAt)) / 1000));
    return runs.track(runTarget(taken, target));
  };

  async function runTarget(taken: TakenJob, target: Target): Promise<JobEnd> {
    const p = taken.data;
    const as: Omit<FireOutcome, 'status'> = { ...recordedAs(target), target: jobKey(p.job, p.list), firedAt: new Date(p.firedAt) };
    const fire: FireScope = { lockDb: opts.lockDb, engineJob: { id: taken.id, attempt: taken.retryCount } };
    opts.open.add(fire);
    // A list's job runs with its account's client and config (platform, lists, mirror schema).
    const { list } = target;
    const client = list && opts.clientFor ? opts.clientFor(list) : opts.client;
    const seen = list ? configForList(config, list) : config;
    const ctx = { db: opts.db, client, config: seen, logger, signal: runs.signal, list, from: p.from };
    try {
      const value = await runInFire(fire, () => target.job.run(ctx));
      if (runs.signal.aborted) {
        outcomes.note({ ...as, runId: fire.runId, status: 'interrupted' });
        return { kind: 'handBack', delaySeconds: 0, why: 'stopped by shutdown; the next worker carries on from its checkpoint' };
      }
      outcomes.note({ ...as, runId: fire.runId, status: 'succeeded' });
      const status = (value as { status?: unknown } | undefined)?.status;
      return { kind: 'done', output: { status: typeof status === 'string' ? status : 'succeeded', runId: fire.runId ?? null } };
    } catch (err) {
      return failed(taken, target, fire, err, as);
    } finally {
      opts.open.delete(fire);
    }
  }

  function failed(taken: TakenJob, target: Target, fire: FireScope, err: unknown, as: Omit<FireOutcome, 'status'>): JobEnd {
    const failure = describeFailure(explainDatabaseError(err, config.database.url));
    const reason = scrubSecrets(failure.error, secretsOf(config));
    const log = logger.child({ job: target.job.name, ...(target.list ? { list: target.list.name } : {}) });
    if (err instanceof LockedError) {
      log.info(`deferred: ${reason}`);
      outcomes.note({ ...as, runId: fire.runId, status: 'skipped', reason });
      return { kind: 'handBack', delaySeconds: BUSY_DELAY_SECONDS, why: reason };
    }
    if (runs.signal.aborted) {
      outcomes.note({ ...as, runId: fire.runId, status: 'interrupted', reason });
      return { kind: 'handBack', delaySeconds: 0, why: 'stopped by shutdown; the next worker carries on from its checkpoint' };
    }
    if (fire.runId === undefined) {
      log.error({ error: reason, ...(failure.code ? { code: failure.code } : {}) }, `${target.job.name} failed`);
      log.debug({ err }, `${target.job.name} failed (details)`);
    }
    outcomes.note({ ...as, runId: fire.runId, status: 'failed', reason });
    return { kind: 'failed', message: reason, retry: isTransient(err) && taken.retryCount < taken.retryLimit };
  }
}
