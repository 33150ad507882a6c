/**
 * The long-running process: node-cron schedules every job from the config
 * (one fire runs once across replicas, elected through Postgres), an HTTP
 * server for /healthz (and the routes other parts add: /metrics, /hooks), and
 * a clean shutdown: stop the schedules, let the page in flight finish,
 * release locks, close pools.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import cron, { type RunCoordinator, type ScheduledTask } from 'node-cron';
import { jobs as allJobs, type JobDefinition } from '../jobs/index.js';
import type { Config, ListConfig } from './config.js';
import type { Knex } from './db.js';
import { LockedError } from './errors.js';
import type { Logger } from './logger.js';
import type { PlatformClient } from './platform/client.js';
import { listStatuses } from './status.js';
import { claimLease, deleteStaleLeases } from './store/leases.js';
import { HOLDER } from './store/runs.js';

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;

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
  health?: () => Promise<{ degraded: boolean; [key: string]: unknown }>;
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

export async function startServe(opts: ServeOptions): Promise<RunningServe> {
  const { config, db, client, logger } = opts;
  const jobs = opts.jobs ?? allJobs;
  const abort = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  const tasks: ScheduledTask[] = [];
  const pullAgain = new Set<string>();
  const runningPulls = new Map<string, Promise<unknown>>();

  const listOf = (name?: string): ListConfig | undefined => (name ? config.lists.find((l) => l.name === name) : undefined);

  function track<T>(p: Promise<T>): Promise<T> {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p)).catch(() => undefined);
    return p;
  }

  async function execute(job: JobDefinition, list?: ListConfig): Promise<unknown> {
    // The job binds list, job and runId to its own lines; this logger is for the outcome only.
    const log = logger.child({ job: job.name, ...(list ? { list: list.name } : {}) });
    try {
      return await job.run({ db, client, config, logger, signal: abort.signal, list });
    } catch (err) {
      if (err instanceof LockedError) {
        log.info(`skipped: ${err.message}`);
        return undefined;
      }
      log.error({ err }, `${job.name} failed`);
      return undefined;
    }
  }

  function runPull(list: ListConfig): Promise<unknown> {
    const job = jobs.find((j) => j.name === 'pull');
    if (!job) return Promise.resolve(undefined);
    const existing = runningPulls.get(list.name);
    if (existing) {
      pullAgain.add(list.name);
      return existing;
    }
    const p = track(
      execute(job, list).finally(() => {
        runningPulls.delete(list.name);
        if (pullAgain.delete(list.name) && !abort.signal.aborted) void runPull(list);
      }),
    );
    runningPulls.set(list.name, p);
    return p;
  }

  const routes: Record<string, RouteHandler> = {
    '/healthz': (_req, res) => health(res),
    ...(opts.routes ?? {}),
  };

  async function health(res: ServerResponse): Promise<void> {
    try {
      await db.raw('select 1');
    } catch (err) {
      json(res, 503, { status: 'down', database: (err as Error).message });
      return;
    }
    const lists = await listStatuses(db, config);
    const stale = lists.filter((l) => l.lagMinutes !== null && l.lagMinutes > config.serve.maxLagMinutes);
    const extra = opts.health ? await opts.health() : undefined;
    const degraded = stale.length > 0 || lists.some((l) => l.lastError) || extra?.degraded === true;
    const { degraded: _extraDegraded, ...more } = extra ?? { degraded: false };
    json(res, 200, {
      status: degraded ? 'degraded' : 'ok',
      ...more,
      database: 'ok',
      lists: lists.map((l) => ({
        list: l.list,
        lastRunAt: l.lastRunAt,
        lastRunStatus: l.lastRunStatus,
        lastSuccessAt: l.lastSuccessAt,
        watermark: l.watermark,
        lagMinutes: l.lagMinutes,
        lastError: l.lastError,
      })),
    });
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const prefix = Object.keys(routes)
      .filter((p) => (p.endsWith('/') ? url.pathname.startsWith(p) : url.pathname === p))
      .sort((a, b) => b.length - a.length)[0];
    if (!prefix) {
      json(res, 404, { error: 'not found' });
      return;
    }
    Promise.resolve(routes[prefix]!(req, res, url)).catch((err: unknown) => {
      logger.error({ err, path: url.pathname }, 'request failed');
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.end();
    });
  });
  const port = opts.port ?? config.serve.port;
  const host = opts.host ?? config.serve.host;
  // Listen before scheduling anything: a process that cannot serve must end, not sync on in the background.
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, host, port)));
    server.listen(port, host, () => resolve());
  });
  if (opts.schedule !== false) {
    const coordinator = postgresRunCoordinator(db, HOLDER, logger);
    for (const job of jobs) {
      const targets: (ListConfig | undefined)[] = job.perList ? [...config.lists] : [undefined];
      for (const list of targets) {
        const expr = job.scheduleOf(config, list);
        if (!expr) continue;
        const name = list ? `${job.name}:${list.name}` : job.name;
        const task = cron.schedule(expr, () => (job.name === 'pull' && list ? runPull(list) : track(execute(job, list))), {
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
  }


  const addr = server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : port;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${boundPort}`;
  logger.info({ url }, 'serve listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    server,
    runNow(name, listName) {
      const job = jobs.find((j) => j.name === name);
      if (!job) return Promise.reject(new Error(`no job named ${name}`));
      const list = listOf(listName);
      if (name === 'pull' && list) return runPull(list);
      return track(execute(job, list));
    },
    requestPull(listName) {
      const list = listOf(listName);
      if (list && !abort.signal.aborted) void runPull(list);
    },
    async idle() {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    close() {
      closing ??= (async () => {
        logger.info({ running: inFlight.size }, 'shutting down: stopping schedules, finishing pages in flight');
        for (const t of tasks) await t.destroy();
        abort.abort();
        const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), config.serve.shutdownTimeoutMs).unref());
        const done = (async () => {
          while (inFlight.size) await Promise.allSettled([...inFlight]);
          return 'done' as const;
        })();
        if ((await Promise.race([done, timeout])) === 'timeout') logger.warn('shutdown timeout: runs still in flight keep their checkpoints');
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      })();
      return closing;
    },
  };
}

function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const why = err.code === 'EADDRINUSE' ? 'the port is in use by another process' : err.code === 'EACCES' ? 'permission denied' : err.message;
  return new Error(`serve cannot listen on ${host}:${port}: ${why} (${err.code ?? 'error'}). Stop the other process, or set serve.port / --port.`, { cause: err });
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
