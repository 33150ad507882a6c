/**
 * The long-running process, composed of three named parts:
 * - the scheduler (src/serve/scheduler.ts): every job's schedule from the
 *   config, one fire run once across replicas, runs asked for now or early;
 * - the HTTP routes (src/serve/http.ts): /healthz, and the routes other parts
 *   add (/metrics, /hooks/);
 * - shutdown (src/serve/shutdown.ts): stop the schedules, abort every job's
 *   run context, let the page or change in flight finish, close HTTP.
 */
import type { Server } from 'node:http';
import { jobs as allJobs, type JobDefinition } from '../jobs/index.js';
import type { Config } from './config.js';
import type { Knex } from './db.js';
import type { Logger } from './logger.js';
import type { PlatformClient } from './platform/client.js';
import { healthRoute, startHttp, type HealthExtra, type RouteHandler } from './serve/http.js';
import { createScheduler } from './serve/scheduler.js';
import { createRunTracker, createShutdown } from './serve/shutdown.js';

export { json, type RouteHandler } from './serve/http.js';
export { postgresRunCoordinator } from './serve/scheduler.js';

export interface ServeOptions {
  config: Config;
  db: Knex;
  client: PlatformClient;
  logger: Logger;
  jobs?: readonly JobDefinition[];
  /** Overrides config.serve.port (0 = any free port). */
  port?: number;
  host?: string;
  /** Routes by path prefix, e.g. '/metrics', '/hooks/'. */
  routes?: Record<string, RouteHandler>;
  /** Start without the cron schedules (tests, receiver-only replicas). */
  schedule?: boolean;
  /** More for /healthz (e.g. realtime subscriptions): merged into its answer; `degraded: true` makes it degraded. */
  health?: HealthExtra;
}

export interface RunningServe {
  url: string;
  server: Server;
  /** Runs a job now (as a schedule fire would, without election). */
  runNow(job: JobDefinition['name'], list?: string): Promise<unknown>;
  /** Asks for an early pull of a list; coalesced with a pull already running. */
  requestPull(list: string): void;
  /** Resolves when no job is running. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export async function startServe(opts: ServeOptions): Promise<RunningServe> {
  const { config, db, logger } = opts;
  const jobs = opts.jobs ?? allJobs;
  const runs = createRunTracker();
  const scheduler = createScheduler({ config, db, client: opts.client, logger, jobs, runs });
  // Listen before scheduling anything: a process that cannot serve must end, not sync on in the background.
  const http = await startHttp({
    routes: { '/healthz': healthRoute(db, config, opts.health), ...(opts.routes ?? {}) },
    logger,
    host: opts.host ?? config.serve.host,
    port: opts.port ?? config.serve.port,
  });
  if (opts.schedule !== false) scheduler.start();
  logger.info({ url: http.url }, 'serve listening');

  const target = (name: JobDefinition['name'], listName?: string) => ({
    job: jobs.find((j) => j.name === name),
    list: listName === undefined ? undefined : config.lists.find((l) => l.name === listName),
  });
  return {
    url: http.url,
    server: http.server,
    runNow(name, listName) {
      const { job, list } = target(name, listName);
      if (!job) return Promise.reject(new Error(`no job named ${name}`));
      return scheduler.runNow(job, list);
    },
    requestPull(listName) {
      const { job, list } = target('pull', listName);
      if (job && list) scheduler.request(job, list);
    },
    idle: () => runs.idle(),
    close: createShutdown({
      logger,
      runs,
      stopSchedules: () => scheduler.stop(),
      closeHttp: () => http.close(),
      timeoutMs: config.serve.shutdownTimeoutMs,
    }),
  };
}
