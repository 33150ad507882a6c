/**
 * serve's scheduler: node-cron fires every job's schedule from the config
 * (one fire runs once across replicas, elected through Postgres), runs asked
 * for now or early, and the outcome of each run in the log. A job marked
 * `coalesce` never runs twice at once for one target: a run asked for while
 * one is under way becomes one more run after it.
 */
import cron, { type RunCoordinator, type ScheduledTask } from 'node-cron';
import type { JobDefinition } from '../../jobs/index.js';
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { LockedError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { claimLease, deleteStaleLeases } from '../store/leases.js';
import { HOLDER } from '../store/runs.js';
import type { RunTracker } from './shutdown.js';

export interface SchedulerOptions {
  config: Config;
  db: Knex;
  client: PlatformClient;
  logger: Logger;
  jobs: readonly JobDefinition[];
  runs: RunTracker;
}

export interface Scheduler {
  /** Starts the cron schedules; returns how many were scheduled. */
  start(): number;
  /** Stops the cron schedules (runs under way go on). */
  stop(): Promise<void>;
  /** Runs a job now, as a schedule fire would without election (coalesced for a `coalesce` job). */
  runNow(job: JobDefinition, list?: ListConfig): Promise<unknown>;
  /** Asks for a run soon; ignored once shutdown began. */
  request(job: JobDefinition, list?: ListConfig): void;
}

export function createScheduler(opts: SchedulerOptions): Scheduler {
  const { config, db, logger, jobs, runs } = opts;
  const tasks: ScheduledTask[] = [];
  const coalesced = new Map<string, { running: Promise<unknown>; again: boolean }>();

  /** One run; its failure is logged here (the job's own lines carry list, job and runId). */
  async function execute(job: JobDefinition, list?: ListConfig): Promise<unknown> {
    const log = logger.child({ job: job.name, ...(list ? { list: list.name } : {}) });
    try {
      return await job.run({ db, client: opts.client, config, logger, signal: runs.signal, list });
    } catch (err) {
      if (err instanceof LockedError) log.info(`skipped: ${err.message}`);
      else log.error({ err }, `${job.name} failed`);
      return undefined;
    }
  }

  /** A run of a `coalesce` job: joins the one under way and asks for one more after it. */
  function coalesce(job: JobDefinition, list?: ListConfig): Promise<unknown> {
    const key = targetName(job, list);
    const current = coalesced.get(key);
    if (current) {
      current.again = true;
      return current.running;
    }
    const entry = { running: Promise.resolve<unknown>(undefined), again: false };
    entry.running = runs.track(
      execute(job, list).finally(() => {
        coalesced.delete(key);
        if (entry.again && !runs.signal.aborted) void coalesce(job, list);
      }),
    );
    coalesced.set(key, entry);
    return entry.running;
  }

  const runNow = (job: JobDefinition, list?: ListConfig): Promise<unknown> =>
    job.coalesce ? coalesce(job, list) : runs.track(execute(job, list));

  return {
    start() {
      const coordinator = postgresRunCoordinator(db, HOLDER, logger);
      for (const job of jobs) {
        for (const list of job.perList ? [...config.lists] : [undefined]) {
          const expr = job.scheduleOf(config, list);
          if (!expr) continue;
          const name = targetName(job, list);
          const task = cron.schedule(expr, () => runNow(job, list), {
            name,
            noOverlap: true,
            timezone: config.platform.timeZone,
            distributed: true,
            runCoordinator: coordinator,
          });
          tasks.push(task);
          logger.info({ job: job.name, list: list?.name, schedule: expr, next: task.getNextRun()?.toISOString() }, `scheduled ${name}`);
        }
      }
      if (tasks.length === 0) logger.warn('no jobs scheduled; add lists[].schedule (e.g. "*/10 * * * *") or users.schedule to the config');
      return tasks.length;
    },
    async stop() {
      for (const t of tasks.splice(0)) await t.destroy();
    },
    runNow,
    request(job, list) {
      if (!runs.signal.aborted) void runNow(job, list);
    },
  };
}

const targetName = (job: JobDefinition, list?: ListConfig): string => (list ? `${job.name}:${list.name}` : job.name);

/** Elects one replica per scheduled fire: the first to claim the fire's key as a lease runs it. */
export function postgresRunCoordinator(db: Knex, holder = HOLDER, logger?: Logger): RunCoordinator {
  let lastCleanup = 0;
  return {
    async shouldRun(key: string, ttlMs: number): Promise<boolean> {
      try {
        return await claimFire(key, ttlMs);
      } catch (err) {
        // The database is gone (restarting?): skip this fire; the next one asks again and runs once it is back.
        logger?.warn({ err, fire: key }, 'cannot reach the database to elect this scheduled run; skipped, the next fire tries again');
        return false;
      }
    },
  };

  async function claimFire(key: string, ttlMs: number): Promise<boolean> {
    if (Date.now() - lastCleanup > 3_600_000) {
      lastCleanup = Date.now();
      await deleteStaleLeases(db, 'fire:');
    }
    return claimLease(db, `fire:${key}`, holder, Math.max(ttlMs, 60_000) / 1000);
  }
}
