/**
 * Real time under test: a world (emulator over HTTP, a Postgres database), a
 * first pull, serve's HTTP with the webhook receiver on a random port, and
 * the realtime part started against it.
 */
import { parseConfig, type Config } from '../../src/config.js';
import { createClient } from '../../src/context.js';
import type { PlatformClient } from '../../src/platform/client.js';
import { startRealtime, type Realtime, type RealtimeOptions } from '../../src/realtime/index.js';
import { jobs } from '../../jobs/index.js';
import { startServe, type RunningServe } from '../../src/serve/start-serve.js';
import { pullList } from '../../src/sync/pull.js';
import { createHookReceiver, HOOKS_PATH } from '../../src/webhooks/index.js';
import { startWorld, type World } from '../helpers/world.js';

export const APP = 'demo';
export const LIST = 'orders';

export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Running {
  w: World;
  config: Config;
  client: PlatformClient;
  serve: RunningServe;
  rt: Realtime;
  /** Starts realtime again (a restart of serve's realtime part). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface StartOptions {
  trust?: 'reread' | 'body';
  idsAsNumbers?: boolean;
  items?: number;
  pull?: boolean;
  /** Merged into the config's platform section (e.g. retries). */
  platform?: Record<string, unknown>;
  /** Merged into the config's serve section. */
  serve?: Record<string, unknown>;
  /** Applier timings (e.g. retryDelayMs). */
  applier?: Partial<Pick<RealtimeOptions, 'retryDelayMs' | 'maxRetryDelayMs' | 'backlogPullEvents' | 'backlogPuller'>>;
  /** How often the receiver logs its counts (ms). */
  summaryEveryMs?: number;
}

let running: Running | undefined;

/** For afterEach: closes what the last `start` opened. */
export async function closeRunning(): Promise<void> {
  await running?.close();
  running = undefined;
}

/** A world, a first pull, and serve with realtime on the orders list. */
export async function start(opts: StartOptions = {}): Promise<Running> {
  const w = await startWorld({ emulator: { items: opts.items ?? 300, idsAsNumbers: opts.idsAsNumbers ?? false } });
  const config = parseConfig({
    platform: { baseUrl: w.emu.baseUrl, apiKey: w.emu.apiKey, requestsPerSecond: 100, timeoutMs: 5000, ...opts.platform },
    database: { url: w.t.url, schema: 'mirror' },
    lists: [{ name: LIST, appID: APP, listID: LIST, realtime: true, realtimeTrust: opts.trust ?? 'reread' }],
    serve: { publicUrl: 'https://sync.example.com', ...opts.serve },
  });
  const client = createClient(config, w.logger, w.t.db);
  if (opts.pull !== false) await pullList({ db: w.t.db, client, config, logger: w.logger }, config.lists[0]!);
  const ref: { rt?: Realtime } = {};
  const hooks = createHookReceiver({
    db: w.t.db,
    config,
    logger: w.logger,
    onItemEvent: (e) => ref.rt?.onItemEvent(e) ?? 'deferred',
    summaryEveryMs: opts.summaryEveryMs,
  });
  const serve = await startServe({
    jobs,
    config,
    db: w.t.db,
    client,
    logger: w.logger,
    port: 0,
    host: '127.0.0.1',
    schedule: false,
    routes: { [HOOKS_PATH]: hooks },
    health: async () => ref.rt!.health(),
  });
  const begin = async (): Promise<Realtime> =>
    startRealtime({
      db: w.t.db,
      client,
      config,
      logger: w.logger,
      callbackBase: serve.url,
      windowMs: 50,
      minIntervalMs: 200,
      recheckDelayMs: 100,
      ...opts.applier,
    });
  ref.rt = await begin();
  const r: Running = {
    w,
    config,
    client,
    serve,
    get rt() {
      return ref.rt!;
    },
    async restart() {
      await ref.rt?.close();
      ref.rt = await begin();
    },
    async close() {
      await ref.rt?.close();
      await serve.close();
      await client.close();
      await w.close();
    },
  };
  running = r;
  return r;
}

/** Stored item events not processed yet. */
export async function openEvents(r: Running): Promise<number> {
  const open = (await r.w.t.db('listsync.webhook_inbox').whereNull('processed_at').count({ n: '*' })) as { n: string }[];
  return Number(open[0]!.n);
}

/** Waits until the emulator has nothing left to deliver and every stored event is applied. */
export async function settled(r: Running, timeoutMs?: number): Promise<void> {
  await until(
    'deliveries to settle',
    async () => {
      const { stats } = await r.w.emu.admin.itemHooks();
      if (stats.pending > 0) return false;
      return (await openEvents(r)) === 0 && !r.rt.applier.busy();
    },
    timeoutMs,
  );
}

export async function liveIds(r: Running): Promise<string[]> {
  const exported = await r.w.emu.admin.exportList(APP, LIST);
  return exported.items.map((i) => String(i.ListDataID));
}
