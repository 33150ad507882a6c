/**
 * The long-running process, composed of named parts, scheduling the jobs it
 * is handed (the entry point, bin/listsync.js, hands it jobs/index.ts):
 * - the scheduler (src/serve/scheduler.ts): every job's schedule from the
 *   config into one queue with a fixed number of workers sized to the pool
 *   (job-queue.ts), locks on a pool of their own (lock-pool.ts), one fire run
 *   once across replicas, runs asked for now or early;
 * - the outcomes (src/serve/run-outcomes.ts): every fire ends in sync_runs,
 *   kept in memory while the database is away;
 * - the run history's retention (src/serve/run-retention.ts): runs older than
 *   serve.runHistoryDays removed shortly after start, then hourly;
 * - the HTTP routes (src/serve/routes.ts): /healthz from what the process knows
 *   (src/serve/health.ts), and the routes other parts add (/metrics, /hooks/);
 * - shutdown (src/serve/shutdown.ts): stop the schedules, drop the queue,
 *   abort every job's run context, let the page or change in flight finish,
 *   record what is left, close HTTP last.
 */
import type { Server } from 'node:http';
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { createHealth } from './health.js';
import { startHttp, type HealthExtra, type RouteHandler } from './routes.js';
import type { ConnectionStats } from './connection-bound.js';
import { workerCount } from './job-queue.js';
import { createLockPool } from './lock-pool.js';
import { createRunOutcomes, type RunOutcomes } from './run-outcomes.js';
import { startRunRetention, type RunRetentionTiming } from './run-retention.js';
import { describeBudget, scheduleBudget } from './schedule-budget.js';
import type { JobDefinition } from './job-definition.js';
import { createScheduler } from './scheduler.js';
import { closeOpenRun } from '../store/runs.js';
import { createRunTracker, createShutdown } from './shutdown.js';

export { json, type RouteHandler } from './routes.js';
export { postgresRunCoordinator } from './scheduler.js';

export interface ServeOptions {
  config: Config;
  db: Knex;
  client: PlatformClient;
  logger: Logger;
  /** The jobs to schedule (jobs/index.ts, handed in by the entry point: nothing in src/ imports jobs/). */
  jobs: readonly JobDefinition[];
  /** Overrides config.serve.port (0 = any free port). */
  port?: number;
  host?: string;
  /** Routes by path prefix, e.g. '/metrics', '/hooks/'. */
  routes?: Record<string, RouteHandler>;
  /** Start without the cron schedules (tests, receiver-only replicas). */
  schedule?: boolean;
  /** More for /healthz (e.g. realtime subscriptions): merged into its answer; `degraded: true` makes it degraded. */
  health?: HealthExtra;
  /** The outcomes of fires (created here when not given; /metrics reads the unrecorded ones). */
  outcomes?: RunOutcomes;
  /** When the run history is pruned (tests; hourly after a minute otherwise). */
  runRetention?: Partial<RunRetentionTiming>;
  /** Runs at shutdown after the runs stopped, before HTTP closes (the webhook listener closes last). */
  beforeHttpClose?: () => Promise<void>;
}

export interface RunningServe {
  url: string;
  server: Server;
  /** Runs a job now (as a schedule fire would, without election). */
  runNow(job: JobDefinition['name'], list?: string): Promise<unknown>;
  /** Asks for an early pull of a list; coalesced with a pull already running. */
  requestPull(list: string): void;
  /** Resolves when no job is queued or running. */
  idle(): Promise<void>;
  /** Workers, queued and running fires. */
  load(): { workers: number; queued: number; running: number };
  /** The listener's connections: open, peak, refused past serve.maxConnections (src/serve/connection-bound.ts). */
  connections(): ConnectionStats;
  close(): Promise<void>;
}

export async function startServe(opts: ServeOptions): Promise<RunningServe> {
  const { config, db, logger } = opts;
  const { jobs } = opts;
  const runs = createRunTracker();
  const workers = workerCount(config.database.poolMax);
  const lockDb = createLockPool(db, workers);
  const outcomes = opts.outcomes ?? createRunOutcomes({ db, logger });
  const scheduler = createScheduler({ config, db, lockDb, client: opts.client, logger, jobs, runs, outcomes, workers });
  const health = createHealth({ db, config, extra: opts.health, outcomes, load: () => scheduler.load() });
  // Listen before scheduling anything: a process that cannot serve must end, not sync on in the background.
  const http = await startHttp({
    routes: { '/healthz': health.route, '/readyz': health.ready, ...(opts.routes ?? {}) },
    logger,
    host: opts.host ?? config.serve.host,
    port: opts.port ?? config.serve.port,
    // Probes are answered on any connection: a burst of callbacks must not make serve look dead.
    bound: { maxConnections: config.serve.maxConnections, exempt: ['/healthz', '/readyz', '/metrics'] },
  }).catch(async (err: unknown) => {
    await health.stop();
    await lockDb.destroy();
    throw err;
  });
  if (opts.schedule !== false && scheduler.start() > 0) {
    const budget = describeBudget(scheduleBudget(config));
    if (budget.warning) logger.warn(budget.message);
    else logger.info(budget.message);
  }
  logger.info({ url: http.url }, 'serve listening');
  const retention = startRunRetention({ db, logger, days: config.serve.runHistoryDays, timing: opts.runRetention });

  const target = (name: JobDefinition['name'], listName?: string) => ({
    job: jobs.find((j) => j.name === name),
    list: listName === undefined ? undefined : config.lists.find((l) => l.name === listName),
  });
  return {
    url: http.url,
    server: http.server,
    connections: http.connections,
    runNow(name, listName) {
      const { job, list } = target(name, listName);
      if (!job) return Promise.reject(new Error(`no job named ${name}`));
      return scheduler.runNow(job, list);
    },
    requestPull(listName) {
      const { job, list } = target('pull', listName);
      if (job && list) scheduler.request(job, list);
    },
    idle: async () => {
      await scheduler.idle();
      await runs.idle();
    },
    load: () => scheduler.load(),
    close: createShutdown({
      logger,
      runs,
      recordLeftovers: async (budgetMs) => {
        const deadline = Date.now() + budgetMs;
        for (const runId of scheduler.openRunIds())
          await closeOpenRun(db, runId, 'interrupted', 'stopped by shutdown before it finished; the next run carries on').catch(
            (err: unknown) => logger.warn({ err, runId }, 'could not close the run at shutdown'),
          );
        await outcomes.flush(Math.max(0, deadline - Date.now()));
        outcomes.stop();
      },
      stopSchedules: async () => {
        await Promise.all([scheduler.stop(), retention.stop()]);
      },
      beforeHttpClose: opts.beforeHttpClose,
      closeHttp: async () => {
        await http.close();
        await health.stop();
        await lockDb.destroy();
      },
      timeoutMs: config.serve.shutdownTimeoutMs,
    }),
  };
}
