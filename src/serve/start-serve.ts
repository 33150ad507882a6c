/**
 * The long-running process, composed of named parts, scheduling the jobs it
 * is handed (the entry point, bin/listsync.js, hands it jobs/index.ts):
 * - the job engine (src/engine/, pg-boss on the work pool): the queue every
 *   serve process shares; this process is one of its workers, running up to
 *   serve.workers jobs at once (worker-count.ts), locks on a pool of their own
 *   (lock-pool.ts);
 * - the scheduler (src/serve/scheduler.ts): every job's schedule from the
 *   config sends jobs to that queue (one job per fire across replicas), and
 *   runs asked for now or early join it;
 * - the outcomes (src/serve/run-outcomes.ts): every fire ends in sync_runs,
 *   kept in memory while the database is away;
 * - the run history's retention (src/serve/run-retention.ts): runs older than
 *   serve.runHistoryDays removed shortly after start, then hourly;
 * - the HTTP routes (src/serve/routes.ts): /healthz from what the process knows
 *   (src/serve/health.ts), and the routes other parts add (/metrics, /hooks/);
 * - shutdown (src/serve/shutdown.ts): stop the schedules and taking jobs,
 *   abort every job's run context, let the page or change in flight finish,
 *   record what is left and hand its jobs back to the queue, close HTTP last.
 */
import type { Server } from 'node:http';
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { createHealth } from './health.js';
import { startHttp, type HealthExtra, type RouteHandler } from './routes.js';
import { workerCount } from './worker-count.js';
import { startBoss } from '../engine/boss.js';
import type { EngineEvents } from '../engine/engine-metrics.js';
import type { ConnectionStats } from './connection-bound.js';
import { createLockPool } from './lock-pool.js';
import { createRunOutcomes, type RunOutcomes } from './run-outcomes.js';
import { startRunRetention, type RunRetentionTiming } from './run-retention.js';
import { describeBudget, scheduleBudget } from './schedule-budget.js';
import type { JobDefinition } from './job-definition.js';
import { createScheduler } from './scheduler.js';
import { closeOpenRun } from '../store/runs.js';
import { createRunTracker, createShutdown } from './shutdown.js';

export { json, type RouteHandler } from './routes.js';

export interface ServeOptions {
  config: Config;
  db: Knex;
  client: PlatformClient;
  /** The client of a list's account (default: `client` for every list). */
  clientFor?: (list: ListConfig) => PlatformClient;
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
  /** How often an idle worker looks for jobs (ms; 1000 by default). */
  pollMs?: number;
  /** The queue's events /metrics counts. */
  engineEvents?: EngineEvents;
}

export interface RunningServe {
  url: string;
  server: Server;
  /** Queues a job (joining the one of its key queued) and resolves with its result once a worker ran it. */
  runNow(job: JobDefinition['name'], list?: string, from?: string): Promise<unknown>;
  /** Queues a job an operator asked for (the console); resolves with its id. */
  enqueue(job: JobDefinition['name'], list?: string, from?: string): Promise<string>;
  /** Asks for an early pull of a list; coalesced with a pull already running. */
  requestPull(list: string): void;
  /** Resolves when no job runs in this process. */
  idle(): Promise<void>;
  /** Worker slots and the jobs running here. */
  load(): { workers: number; queued: number; running: number };
  /** The listener's connections: open, peak, refused past serve.maxConnections (src/serve/connection-bound.ts). */
  connections(): ConnectionStats;
  close(): Promise<void>;
}

export async function startServe(opts: ServeOptions): Promise<RunningServe> {
  const { config, db, logger } = opts;
  const { jobs } = opts;
  const runs = createRunTracker();
  const workers = workerCount(config.database.poolMax, config.serve.workers);
  const boss = await startBoss(db, { supervise: true, superviseSeconds: Math.min(30, config.serve.jobLeaseSeconds), logger });
  const lockDb = createLockPool(db, workers);
  const outcomes = opts.outcomes ?? createRunOutcomes({ db, logger });
  const scheduler = createScheduler({
    ...{ config, db, lockDb, boss, client: opts.client, clientFor: opts.clientFor, logger, jobs, runs, outcomes, workers },
    pollMs: opts.pollMs ?? 1000,
    ...opts.engineEvents,
  });
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
    await boss.stop({ graceful: false });
    await lockDb.destroy();
    throw err;
  });
  if (scheduler.start(opts.schedule !== false) > 0) {
    const budget = describeBudget(scheduleBudget(config));
    if (budget.warning) logger.warn(budget.message);
    else logger.info(budget.message);
  }
  logger.info({ url: http.url, workers }, 'serve listening');
  const retention = startRunRetention({ db, logger, days: config.serve.runHistoryDays, timing: opts.runRetention });

  const target = (name: JobDefinition['name'], listName?: string) => {
    const job = jobs.find((j) => j.name === name);
    if (!job) throw new Error(`no job named ${name}`);
    const list = listName === undefined ? undefined : config.lists.find((l) => l.name === listName);
    if (listName !== undefined && !list) throw new Error(`no list named "${listName}" in the config`);
    return { job, list };
  };
  return {
    url: http.url,
    server: http.server,
    connections: http.connections,
    async runNow(name, listName, from) {
      const { job, list } = target(name, listName);
      return scheduler.runNow(job, list, from);
    },
    async enqueue(name, listName, from) {
      const { job, list } = target(name, listName);
      return scheduler.enqueue(job, list, 'operator', from);
    },
    requestPull(listName) {
      if (config.lists.some((l) => l.name === listName)) {
        const { job, list } = target('pull', listName);
        scheduler.request(job, list);
      }
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
        await scheduler.handBackRunning();
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
        await boss.stop({ graceful: false });
        await lockDb.destroy();
      },
      timeoutMs: config.serve.shutdownTimeoutMs,
    }),
  };
}
