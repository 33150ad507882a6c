/** `listsync serve`: runs until SIGTERM/SIGINT, then shuts down cleanly. */
import { consoleListen, isConsoleAddress } from '../config.js';
import { consoleAnnouncement, consoleToken } from '../console/console-token.js';
import { startConsole, type RunningConsole } from '../console/console-server.js';
import type { AppContext } from '../context.js';
import { createAccountClients } from '../account-clients.js';
import { createDb } from '../db.js';
import { createMetrics } from '../metrics.js';
import { createRequestMinutesWriter } from '../request-minutes-writer.js';
import { startServe, type RunningServe } from '../serve/start-serve.js';
import type { JobDefinition } from '../serve/job-definition.js';
import { createRunOutcomes } from '../serve/run-outcomes.js';
import { startRealtime, type Realtime } from '../realtime/index.js';
import { createHookReceiver, earlyPullOnItemEvent, HOOKS_PATH, replayUnprocessedEvents, type ItemEvent } from '../webhooks/index.js';
import { InvalidArgumentError } from 'commander';
import { ConfigError } from '../errors.js';
import type { AddressInfo } from 'node:net';
import { serveBanner } from './serve-banner.js';
import type { CommandKit } from './command-kit.js';
import { wholeNumber } from './options.js';

/**
 * Where the receiver's callbacks go: a list's own item events to the real-time applier (kept until it
 * has started), workflow events to an early pull; a refused callback asks the list for a catch-up pull.
 */
function callbackRouting(ctx: AppContext, requestPull: (list: string) => void) {
  const earlyPull = earlyPullOnItemEvent(ctx.config, requestPull);
  const ref: { rt?: Realtime } = {};
  const arrivedEarly: ItemEvent[] = [];
  const gaps = new Set<string>();
  return {
    onItemEvent(event: ItemEvent): 'deferred' | void {
      if (!event.resource.startsWith('lists/')) return earlyPull(event);
      if (ref.rt) return ref.rt.onItemEvent(event);
      arrivedEarly.push(event); // stored; queued once realtime has started
      return 'deferred';
    },
    onRefused(list: string | null): void {
      // Not known whose callback it was: any real-time list may have missed it.
      for (const name of list === null ? ctx.config.lists.filter((l) => l.realtime).map((l) => l.name) : [list]) {
        if (ref.rt) ref.rt.gap(name, 'callbacks refused');
        else gaps.add(name);
      }
    },
    realtime: (): Realtime | undefined => ref.rt,
    /** Real time has started: what arrived before it is handed over. */
    attach(rt: Realtime): void {
      ref.rt = rt;
      for (const list of gaps) rt.gap(list, 'callbacks refused');
      for (const event of arrivedEarly.splice(0)) rt.onItemEvent(event);
    },
  };
}

/** Connections the webhook receiver stores callbacks through (its batches in flight). */
const INBOX_CONNECTIONS = 2;

/**
 * The receiver's own connections, opened now and kept open: a burst of thousands of callbacks (each
 * an open socket) never opens a database connection, so it cannot fail with EMFILE, and never waits
 * for the pool the jobs and the applier use.
 */
async function openInboxPool(ctx: AppContext) {
  const db = createDb({
    url: ctx.config.database.url,
    poolMax: INBOX_CONNECTIONS,
    poolMin: INBOX_CONNECTIONS,
    applicationName: 'listsync-webhooks',
    logger: ctx.logger,
  });
  await Promise.all(Array.from({ length: INBOX_CONNECTIONS }, () => db.raw('select 1')));
  return db;
}

/** What a shutdown may take beyond serve.shutdownTimeoutMs (recording the runs, closing the parts) before serve exits anyway. */
const EXIT_GRACE_MS = 3000;

/**
 * serve exits within serve.shutdownTimeoutMs + EXIT_GRACE_MS of the signal, whatever still holds the
 * process (a request or a connection that does not end): every state serve writes is right if it
 * stops at any line, its runs' checkpoints and the unprocessed events are kept for the next start.
 * (catch-up.test.ts: SIGTERM during a bulk edit with a pull running, exit 0 within 10 s.)
 */
function exitWatchdog(ctx: AppContext): void {
  const ms = ctx.config.serve.shutdownTimeoutMs + EXIT_GRACE_MS;
  const timer = setTimeout(() => {
    ctx.logger.warn(
      { afterMs: ms, holding: [...new Set(process.getActiveResourcesInfo())] },
      'shutdown did not end in time: exiting now (checkpoints and unprocessed events are kept for the next start)',
    );
    process.exit(process.exitCode ?? 0);
  }, ms);
  timer.unref();
}

/** Resolves once SIGTERM or SIGINT has closed serve (the applier, then the listener) and the console. */
function untilStopped(ctx: AppContext, serve: RunningServe, consoleServer: RunningConsole | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      ctx.logger.info({ signal }, 'signal received');
      exitWatchdog(ctx);
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      // serve closes the applier before its listener (callbacks are stored until the last moment); the console after.
      void serve
        .close()
        .then(() => consoleServer?.close())
        .then(resolve);
    };
    const onTerm = () => stop('SIGTERM');
    const onInt = () => stop('SIGINT');
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    // Announced once SIGTERM is handled: whoever waits for this line may stop the process at once.
    ctx.io.out(serveBanner(serve.server.address() as AddressInfo, HOOKS_PATH));
  });
}

export async function runServe(
  ctx: AppContext,
  opts: { port?: number; console?: string; jobs: readonly JobDefinition[] },
): Promise<number> {
  // Every fire's outcome: /metrics counts those not written to sync_runs yet (the database away).
  const outcomes = createRunOutcomes({ db: ctx.db, logger: ctx.logger });
  const metrics = createMetrics({ db: ctx.db, config: ctx.config, logger: ctx.logger, unrecorded: () => outcomes.unrecorded() });
  // serve's own clients, one per account built on first use, report every request to /metrics; each account's budget is
  // shared through Postgres like any other. The first account's client serves the single-account paths.
  // Every request is also counted per minute and source for the console's budget page (request-minutes-writer.ts).
  const tally = createRequestMinutesWriter({ db: ctx.db, logger: ctx.logger, defaultSource: 'serve' });
  const onRequest: typeof metrics.onRequest = (e) => {
    metrics.onRequest(e);
    tally.onRequest(e);
  };
  const clients = createAccountClients({ config: ctx.config, logger: ctx.logger, db: ctx.db, onRequest });
  const client = clients.clientFor(ctx.config.accounts[0]!.name);
  // Early pulls go to the serve instance, which exists once the routes are mounted.
  const started: { serve?: RunningServe } = {};
  const requestPull = (list: string): void => started.serve?.requestPull(list);
  const routing = callbackRouting(ctx, requestPull);
  const inboxDb = await openInboxPool(ctx);
  const hooks = createHookReceiver({
    db: ctx.db,
    storeDb: inboxDb,
    config: ctx.config,
    logger: ctx.logger,
    onItemEvent: routing.onItemEvent,
    onOutcome: metrics.onWebhook,
    onRefused: routing.onRefused,
  });
  const serve = await startServe({
    config: ctx.config,
    db: ctx.db,
    client,
    clientFor: (list) => clients.clientFor(list),
    logger: ctx.logger,
    jobs: opts.jobs,
    port: opts.port,
    routes: { '/metrics': metrics.handler, [HOOKS_PATH]: hooks },
    outcomes,
    engineEvents: metrics.engine,
    health: async () => routing.realtime()?.health() ?? { degraded: false },
    // The applier stops before the listener closes: callbacks are taken (stored) until the last moment.
    beforeHttpClose: async () => routing.realtime()?.close(),
  }).catch(async (err: unknown) => {
    await inboxDb.destroy();
    throw err;
  });
  started.serve = serve;
  const rt = await startRealtime({
    db: ctx.db,
    client,
    config: ctx.config,
    logger: ctx.logger,
    requestPull,
    onFlush: metrics.onRealtimeFlush,
    catchUpAtStart: true,
    // Catch-up and backlog pulls take their turn in serve's one queue, recorded like any other run.
    runPull: async (name) => (await serve.runNow('pull', name)) as { status: string } | undefined,
    // A backlog pull is taken only when it would start at once: the applier never waits in the queue.
    pullSlotFree: () => {
      const load = serve.load();
      return load.queued === 0 && load.running < load.workers;
    },
  });
  routing.attach(rt);
  let consoleServer: RunningConsole | undefined;
  try {
    consoleServer = await startConsoleOf(ctx, client, opts.console);
  } catch (err) {
    // A console address the operator chose that cannot be had ends serve: nothing keeps running behind the error.
    await serve.close();
    await rt.close();
    await clients.close();
    await tally.close();
    await inboxDb.destroy();
    throw err;
  }
  const replayed = await replayUnprocessedEvents(ctx.db, ctx.config, requestPull);
  if (replayed) ctx.logger.info({ events: replayed }, 'webhook events left unprocessed by a previous run: early pull requested');
  await untilStopped(ctx, serve, consoleServer);
  await clients.close();
  await tally.close();
  await inboxDb.destroy();
  ctx.io.out('listsync serve stopped');
  return 0;
}

/**
 * The console on its own listener (`serve.console`), unless it is "off"; says where, and a generated token once.
 * The console never stops serve by itself: when the default address cannot be had, serve warns and runs
 * without it; an address the operator chose (serve.console, --console) that cannot be had is a ConfigError (exit 2).
 */
async function startConsoleOf(ctx: AppContext, client: AppContext['client'], address?: string): Promise<RunningConsole | undefined> {
  const at = consoleListen(ctx.config, address);
  if (!at) return undefined;
  const access = consoleToken(ctx.config, at.host);
  let running: RunningConsole;
  try {
    running = await startConsole({
      config: ctx.config,
      db: ctx.db,
      client,
      logger: ctx.logger,
      host: at.host,
      port: at.port,
      token: access.token,
    });
  } catch (err) {
    const code = listenErrorCode(err);
    if (code === undefined) throw err;
    const why = `the console cannot listen on ${at.host}:${at.port}: ${code === 'EADDRINUSE' ? 'the port is in use by another process' : code}`;
    if (!at.explicit) {
      ctx.logger.warn({ code }, `${why}; serve runs without the console (set serve.console or --console to another host:port, or "off")`);
      return undefined;
    }
    throw new ConfigError(
      `${why} (${address !== undefined ? '--console' : 'serve.console'}). Choose a free host:port there, or "off" to run without the console.`,
      address !== undefined ? undefined : 'serve.console',
      { cause: err },
    );
  }
  ctx.io.out(consoleAnnouncement(running.url, access));
  return running;
}

/** The system error code of a listener that could not be opened (EADDRINUSE, EACCES, EADDRNOTAVAIL...), if that is what `err` is. */
function listenErrorCode(err: unknown): string | undefined {
  const cause = (err as { cause?: unknown } | undefined)?.cause as NodeJS.ErrnoException | undefined;
  return cause?.syscall === 'listen' && typeof cause.code === 'string' ? cause.code : undefined;
}

function consoleAddressArg(value: string): string {
  if (!isConsoleAddress(value)) throw new InvalidArgumentError('host:port (e.g. 127.0.0.1:8082), or "off"');
  return value;
}

export function register({ program, withContext, jobs }: CommandKit): void {
  program
    .command('serve')
    .description('run the schedules, the webhook receiver, /healthz, /metrics and the console (serve.console) until SIGTERM')
    .option('--port <n>', 'HTTP port (default serve.port)', wholeNumber(0, 65535, 'a port number 0-65535'))
    .option('--console <address>', 'where the console listens, host:port (default serve.console), or "off"', consoleAddressArg)
    .option('--migrate', "apply listsync's pending migrations before starting (without it, serve refuses to start on tables behind)", false)
    .action((opts: { port?: number; console?: string; migrate: boolean }) =>
      withContext((ctx) => runServe(ctx, { port: opts.port, console: opts.console, jobs }), {
        schema: opts.migrate ? 'migrate' : 'current',
        service: true,
      }),
    );
}
