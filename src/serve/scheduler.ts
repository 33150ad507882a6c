/**
 * serve's scheduler on the job engine (src/engine/): node-cron fires every
 * job's schedule from the config; each fire sends a job to the queue every
 * serve process shares, keyed by the job and its list, so N replicas firing
 * the same minute make one job and a fire whose job is still queued or
 * running is skipped with the reason (recorded in `sync_runs`). This
 * process's worker takes jobs from that queue while it has a free slot and
 * runs them (job-runner.ts), whoever sent them: another replica, the CLI's
 * `--queue`, the console. Lists sharing a five-field cron expression are
 * spread over its minute by a hash of their name (`spreadOverMinute`), so a
 * hundred lists on "* * * * *" do not fire in the same second
 * (test/serve-capacity.test.ts, test/serve-job-queue.test.ts).
 */
import cron, { type ScheduledTask, type TaskContext } from 'node-cron';
import type PgBoss from 'pg-boss';
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import type { FireScope } from '../sync/fire-scope.js';
import { createEnqueuer } from '../engine/enqueue.js';
import { payloadFor, sendOptionsFor } from '../engine/job-request.js';
import { jobKey, leaseSecondsOf, type JobOrigin, type JobPayload } from '../engine/job-payload.js';
import { jobState, queueCounts, type TakenJob } from '../engine/job-rows.js';
import { startWorker, type JobEnd, type Worker } from '../engine/worker.js';
import type { JobDefinition } from './job-definition.js';
import { createJobRunner, recordedAs } from './job-runner.js';
import type { RunOutcomes } from './run-outcomes.js';
import type { RunTracker } from './shutdown.js';

export interface SchedulerOptions {
  config: Config;
  db: Knex;
  /** Where runs take their advisory locks (one connection per worker slot). */
  lockDb: Knex;
  boss: PgBoss;
  client: PlatformClient;
  /** The client of a list's account (default: `client` for every list). */
  clientFor?: (list: ListConfig) => PlatformClient;
  logger: Logger;
  jobs: readonly JobDefinition[];
  runs: RunTracker;
  outcomes: RunOutcomes;
  workers: number;
  /** How often an idle worker looks for jobs (ms). */
  pollMs: number;
  /** A job taken again after a failure (`takenOver`: its worker died). */
  onRetry?(job: TakenJob, takenOver: boolean): void;
  /** A job started: seconds since it was asked for. */
  onStart?(payload: JobPayload, waitedSeconds: number): void;
}

export interface Scheduler {
  /** Starts the worker, and the cron schedules unless `schedule` is false; returns how many schedules. */
  start(schedule: boolean): number;
  /** Stops the cron schedules and taking jobs; runs under way go on. */
  stop(): Promise<void>;
  /** Queues a job (joining the one of its key queued) and resolves with its result once it ran, here or elsewhere. */
  runNow(job: JobDefinition, list?: ListConfig, from?: string): Promise<unknown>;
  /** Queues a job without waiting for it; resolves with its id. */
  enqueue(job: JobDefinition, list: ListConfig | undefined, origin: JobOrigin, from?: string): Promise<string>;
  /** Asks for a run soon; ignored once shutdown began. */
  request(job: JobDefinition, list?: ListConfig): void;
  /** What /healthz shows: this worker's slots and runs, and the jobs waiting on the shared queue. */
  load(): { workers: number; queued: number; running: number };
  /** The `sync_runs` rows of the runs under way (what shutdown closes when they outlast it). */
  openRunIds(): number[];
  /** Hands the jobs still running here back to the queue (shutdown). */
  handBackRunning(): Promise<void>;
  /** Resolves when no job runs here. */
  idle(): Promise<void>;
}

export function createScheduler(opts: SchedulerOptions): Scheduler {
  const { config, logger, jobs, runs, outcomes } = opts;
  const tasks: ScheduledTask[] = [];
  const open = new Set<FireScope>();
  const enqueuer = createEnqueuer(opts.boss, opts.db, sendOptionsFor(config));
  const execute = createJobRunner({ ...opts, open });
  let worker: Worker | undefined;
  // What /healthz shows as queued: the shared queue's waiting jobs, read every few seconds (never at a probe).
  let queued = 0;
  const countQueued = setInterval(() => {
    queueCounts(opts.db)
      .then((c) => (queued = c.reduce((n, a) => n + a.waiting, 0)))
      .catch(() => undefined);
  }, 5000);
  countQueued.unref();
  const payload = (job: JobDefinition, list: ListConfig | undefined, origin: JobOrigin, at: Date, from?: string): JobPayload =>
    payloadFor(config, job.name, list, origin, at, from);

  async function fire(job: JobDefinition, list: ListConfig | undefined, at: Date): Promise<void> {
    const p = payload(job, list, 'schedule', at);
    try {
      const r = await enqueuer.fire(p);
      if ('sent' in r) worker?.wake();
      else if ('coalesced' in r) {
        logger.info({ job: job.name, list: list?.name }, `skipped: ${r.coalesced}`);
        const as = { ...recordedAs({ job, list }), target: jobKey(p.job, p.list), firedAt: new Date(p.firedAt) };
        outcomes.note({ ...as, status: 'skipped', reason: r.coalesced, capacity: true });
      }
    } catch (err) {
      logger.warn({ err, job: job.name, list: list?.name }, 'could not queue the scheduled run; the next fire tries again');
      const as = { ...recordedAs({ job, list }), target: jobKey(p.job, p.list), firedAt: new Date(p.firedAt) };
      outcomes.note({ ...as, status: 'failed', reason: `could not queue the run: ${coerceError(err).message}` });
    }
  }

  async function waitForEnd(id: string): Promise<unknown> {
    for (;;) {
      const here = worker?.endOf(id);
      if (here) return outputOf(await here);
      const s = await jobState(opts.db, id);
      if (s && ['completed', 'failed', 'cancelled'].includes(s.state)) return s.output ?? undefined;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const enqueue: Scheduler['enqueue'] = async (job, list, origin, from) => {
    const id = await enqueuer.request(payload(job, list, origin, new Date(), from));
    worker?.wake();
    return id;
  };

  return {
    start(schedule) {
      worker = startWorker({
        db: opts.db,
        boss: opts.boss,
        logger,
        slots: opts.workers,
        pollMs: opts.pollMs,
        renewEveryMs: (config.serve.jobLeaseSeconds * 1000) / 3,
        leaseOf: (j) => leaseSecondsOf(j.data.job, config.serve.jobLeaseSeconds),
        execute,
      });
      if (!schedule) return 0;
      return scheduleAll(config, jobs, logger, tasks, (job, list, at) => void fire(job, list, at), opts.workers);
    },
    async stop() {
      clearInterval(countQueued);
      for (const t of tasks.splice(0)) await t.destroy();
      await worker?.stopTaking();
    },
    runNow: async (job, list, from) => waitForEnd(await enqueue(job, list, 'now', from)),
    enqueue,
    request(job, list) {
      if (runs.signal.aborted) return;
      enqueue(job, list, 'request').catch((err: unknown) =>
        logger.warn({ err, job: job.name, list: list?.name }, 'could not queue the run'),
      );
    },
    load: () => ({ workers: opts.workers, queued, running: worker?.running ?? 0 }),
    openRunIds: () => [...open].flatMap((f) => (f.runId === undefined ? [] : [f.runId])),
    handBackRunning: async () => worker?.handBackRunning('stopped by shutdown; the next worker carries on from its checkpoint'),
    idle: async () => worker?.idle(),
  };
}

/** What a job's end tells the one who asked for it: the run's output, or the failure. */
function outputOf(end: JobEnd): unknown {
  if (end.kind === 'done') return end.output;
  if (end.kind === 'failed') return { status: 'failed', error: end.message };
  return { status: 'handed back', reason: end.why };
}

/** Schedules every job's fires; returns how many. */
function scheduleAll(
  config: Config,
  jobs: readonly JobDefinition[],
  logger: Logger,
  tasks: ScheduledTask[],
  fire: (job: JobDefinition, list: ListConfig | undefined, at: Date) => void,
  workers: number,
): number {
  // node-cron's own notices (a missed execution) go through the logger, one line each.
  const cronLogger = cronNotices(logger);
  for (const job of jobs) {
    for (const list of job.perList ? [...config.lists] : [undefined]) {
      const asked = job.scheduleOf(config, list);
      if (!asked) continue;
      const name = jobKey(job.name, list?.name);
      const expr = spreadOverMinute(asked, name);
      const task = cron.schedule(expr, (ctx: TaskContext) => fire(job, list, ctx.date), {
        name,
        timezone: config.platform.timeZone,
        logger: cronLogger,
      });
      tasks.push(task);
      logger.info({ job: job.name, list: list?.name, schedule: expr, next: task.getNextRun()?.toISOString() }, `scheduled ${name}`);
    }
  }
  if (tasks.length === 0) logger.warn('no jobs scheduled; add lists[].schedule (e.g. "*/10 * * * *") or users.schedule to the config');
  else logger.info({ workers, schedules: tasks.length }, 'scheduled runs go to the job queue every serve process shares');
  return tasks.length;
}

/**
 * A five-field expression fires at second 0 of its minutes; this one fires at a second of them taken
 * from a hash of `seed`, the same on every start and every replica. Six-field expressions are kept.
 */
export function spreadOverMinute(expr: string, seed: string): string {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5) return expr;
  let h = 0x811c9dc5;
  for (const ch of seed) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return `${h % 60} ${fields.join(' ')}`;
}

/** node-cron's logger: its notices as our log lines (never raw on stderr). */
function cronNotices(logger: Logger) {
  const line = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, extra?: unknown) =>
    logger[level]({ source: 'node-cron', ...(extra instanceof Error ? { error: extra.message } : {}) }, String(message));
  return { info: line('info'), warn: line('warn'), error: line('error'), debug: line('debug') };
}
