/**
 * serve's scheduler: node-cron fires every job's schedule from the config
 * into one queue run by a fixed number of workers (job-queue.ts); a worker
 * elects the fire across replicas through Postgres (one fire runs once),
 * runs it with its lock taken on the lock pool, and accounts for its outcome
 * (run-outcomes.ts). Lists sharing a five-field cron expression are spread
 * over its minute by a hash of their name (`spreadOverMinute`), so a hundred
 * lists on "* * * * *" do not fire in the same second. A job marked
 * `coalesce` asked for early while it runs gets one more run after it; a
 * scheduled fire whose run is still queued or running is skipped with the
 * reason (test/serve-capacity.test.ts).
 */
import cron, { type ScheduledTask, type TaskContext } from 'node-cron';
import type { JobDefinition } from './job-definition.js';
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
import { claimLease, deleteStaleLeases } from '../store/leases.js';
import { HOLDER, type Job } from '../store/runs.js';
import { createJobQueue, type JobQueue, type Origin, type QueueEntry } from './job-queue.js';
import { describeFailure, type RunOutcomes } from './run-outcomes.js';
import type { RunTracker } from './shutdown.js';

export interface SchedulerOptions {
  config: Config;
  db: Knex;
  /** Where runs take their advisory locks (one connection per worker). */
  lockDb: Knex;
  client: PlatformClient;
  /** The client of a list's account (default: `client` for every list). */
  clientFor?: (list: ListConfig) => PlatformClient;
  logger: Logger;
  jobs: readonly JobDefinition[];
  runs: RunTracker;
  outcomes: RunOutcomes;
  workers: number;
}

export interface Scheduler {
  /** Starts the cron schedules; returns how many were scheduled. */
  start(): number;
  /** Stops the cron schedules and drops the queued fires (recorded as skipped: shutdown); runs under way go on. */
  stop(): Promise<void>;
  /** Runs a job now, as a schedule fire would without election (joins the same job queued). */
  runNow(job: JobDefinition, list?: ListConfig): Promise<unknown>;
  /** Asks for a run soon; ignored once shutdown began. */
  request(job: JobDefinition, list?: ListConfig): void;
  /** What /healthz shows of the queue. */
  load(): { workers: number; queued: number; running: number };
  /** The `sync_runs` rows of the runs under way (what shutdown closes when they outlast it). */
  openRunIds(): number[];
  /** Resolves when nothing is queued or running. */
  idle(): Promise<void>;
}

interface Target {
  job: JobDefinition;
  list?: ListConfig;
}

export function createScheduler(opts: SchedulerOptions): Scheduler {
  const { config, logger, jobs, runs, outcomes } = opts;
  const tasks: ScheduledTask[] = [];
  const open = new Set<FireScope>();
  const elect = fireElection(opts.db, HOLDER, logger);
  const queue: JobQueue<Target> = createJobQueue<Target>({
    workers: opts.workers,
    execute: (entry) => runs.track(execute(entry)),
    onCoalesced: (entry, reason) => {
      logger.info({ job: entry.target.job.name, list: entry.target.list?.name }, `skipped: ${reason}`);
      outcomes.note({ ...recordedAs(entry.target), target: entry.key, status: 'skipped', reason, capacity: true, firedAt: entry.firedAt });
    },
  });

  /** One run; its outcome accounted for here, its failure logged once (by the run, or here when it never opened). */
  async function execute(entry: QueueEntry<Target>): Promise<unknown> {
    const { job, list } = entry.target;
    const as = { ...recordedAs(entry.target), target: entry.key, firedAt: entry.firedAt };
    const log = logger.child({ job: job.name, ...(list ? { list: list.name } : {}) });
    const fire: FireScope = { lockDb: opts.lockDb };
    open.add(fire);
    try {
      if (entry.origin === 'schedule' && !(await elect(entry.key, entry.firedAt))) return undefined;
      // A list's job runs with its account's client and config (platform, lists, mirror schema).
      const client = list && opts.clientFor ? opts.clientFor(list) : opts.client;
      const seen = list ? configForList(config, list) : config;
      const value = await runInFire(fire, () => job.run({ db: opts.db, client, config: seen, logger, signal: runs.signal, list }));
      outcomes.note({ ...as, runId: fire.runId, status: runs.signal.aborted ? 'interrupted' : 'succeeded' });
      return value;
    } catch (err) {
      // A connection failure names the (redacted) database, as a run's own record of it does.
      const failure = describeFailure(explainDatabaseError(err, config.database.url));
      const reason = scrubSecrets(failure.error, secretsOf(config));
      if (err instanceof LockedError) {
        log.info(`skipped: ${reason}`);
        outcomes.note({ ...as, runId: fire.runId, status: 'skipped', reason });
      } else {
        if (fire.runId === undefined) {
          log.error({ error: reason, ...(failure.code ? { code: failure.code } : {}) }, `${job.name} failed`);
          log.debug({ err }, `${job.name} failed (details)`);
        }
        outcomes.note({ ...as, runId: fire.runId, status: runs.signal.aborted ? 'interrupted' : 'failed', reason });
      }
      return undefined;
    } finally {
      open.delete(fire);
    }
  }

  const offer = (job: JobDefinition, list: ListConfig | undefined, origin: Origin, firedAt?: Date): Promise<unknown> =>
    queue.offer(targetName(job, list), list ? `list:${list.name}` : job.name, { job, list }, origin, firedAt);

  return {
    start() {
      // node-cron's own notices (a missed execution) go through the logger, one line each.
      const cronLogger = cronNotices(logger);
      for (const job of jobs) {
        for (const list of job.perList ? [...config.lists] : [undefined]) {
          const asked = job.scheduleOf(config, list);
          if (!asked) continue;
          const name = targetName(job, list);
          const expr = spreadOverMinute(asked, name);
          const task = cron.schedule(expr, (ctx: TaskContext) => void offer(job, list, 'schedule', ctx.date), {
            name,
            timezone: config.platform.timeZone,
            logger: cronLogger,
          });
          tasks.push(task);
          logger.info({ job: job.name, list: list?.name, schedule: expr, next: task.getNextRun()?.toISOString() }, `scheduled ${name}`);
        }
      }
      if (tasks.length === 0) logger.warn('no jobs scheduled; add lists[].schedule (e.g. "*/10 * * * *") or users.schedule to the config');
      else logger.info({ workers: opts.workers, schedules: tasks.length }, 'scheduled runs share one queue');
      return tasks.length;
    },
    async stop() {
      for (const t of tasks.splice(0)) await t.destroy();
      const dropped = queue.drain();
      for (const entry of dropped)
        outcomes.note({ ...recordedAs(entry.target), target: entry.key, status: 'skipped', reason: 'shutdown', firedAt: entry.firedAt });
      if (dropped.length) logger.info({ dropped: dropped.length }, 'queued runs dropped at shutdown (recorded as skipped)');
    },
    runNow: (job, list) => offer(job, list, 'now'),
    request(job, list) {
      if (!runs.signal.aborted) void offer(job, list, job.coalesce ? 'request' : 'now');
    },
    load: () => ({ workers: queue.workers, queued: queue.queued, running: queue.running }),
    openRunIds: () => [...open].flatMap((f) => (f.runId === undefined ? [] : [f.runId])),
    idle: () => queue.idle(),
  };
}

const targetName = (job: JobDefinition, list?: ListConfig): string => (list ? `${job.name}:${list.name}` : job.name);

/** The list and job a target's runs are recorded under in `sync_runs`. */
function recordedAs({ job, list }: Target): { list: string; job: Job } {
  const recorded: Job = job.name === 'reconcile-full' ? 'reconcile' : job.name;
  if (list) return { list: list.name, job: recorded };
  return { list: job.name === 'directory' ? DIRECTORY_JOB_LIST : USERS_JOB_LIST, job: recorded };
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

/** Elects one replica per scheduled fire: the first to claim the fire's key as a lease runs it. Throws when the database is away. */
function fireElection(db: Knex, holder: string, logger: Logger) {
  let lastCleanup = 0;
  return async (key: string, firedAt: Date): Promise<boolean> => {
    if (Date.now() - lastCleanup > 3_600_000) {
      lastCleanup = Date.now();
      await deleteStaleLeases(db, 'fire:').catch((err: unknown) => logger.debug({ err }, 'removing old fire leases failed'));
    }
    return claimLease(db, `fire:${key}:${firedAt.toISOString()}`, holder, 120);
  };
}

/** Kept for callers that elect node-cron fires themselves (tests of the lease). */
export function postgresRunCoordinator(db: Knex, holder = HOLDER, logger?: Logger) {
  return {
    async shouldRun(key: string, ttlMs: number): Promise<boolean> {
      try {
        return await claimLease(db, `fire:${key}`, holder, Math.max(ttlMs, 60_000) / 1000);
      } catch (err) {
        logger?.warn({ err, fire: key }, 'cannot reach the database to elect this scheduled run; skipped, the next fire tries again');
        return false;
      }
    },
  };
}
