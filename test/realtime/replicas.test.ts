/**
 * Item event subscriptions made once across `serve` replicas: replicas
 * starting at the same moment (each with its own database pool, client and
 * HTTP server) leave exactly one subscription per list and event type on the
 * platform; a subscription replaced while the platform cannot remove it is
 * kept by ID and removed at a later start.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import { createClient } from '../../src/context.js';
import { createDb } from '../../src/db.js';
import { removeSubscription, startRealtime, type Realtime } from '../../src/realtime/index.js';
import { jobs } from '../../jobs/index.js';
import { startServe } from '../../src/serve/start-serve.js';
import { createHookReceiver, HOOKS_PATH } from '../../src/webhooks/index.js';
import { startWorld, type World } from '../helpers/world.js';
import { APP, LIST } from './support.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

function realtimeConfig(w: World): Config {
  return parseConfig({
    platform: { baseUrl: w.emu.baseUrl, apiKey: w.emu.apiKey, requestsPerSecond: 100, timeoutMs: 5000, retries: 0 },
    database: { url: w.t.url, schema: 'mirror' },
    lists: [{ name: LIST, appID: APP, listID: LIST, realtime: true }],
    serve: { publicUrl: 'https://sync.example.com' },
  });
}

/** One replica as `serve` composes it: its own pool, client, HTTP server with the receiver, and realtime. */
async function startReplica(w: World, config: Config, callbackBase?: string): Promise<{ close(): Promise<void> }> {
  const db = createDb({ url: w.t.url, poolMax: 4 });
  const client = createClient(config, w.logger, db);
  const ref: { rt?: Realtime } = {};
  const hooks = createHookReceiver({ db, config, logger: w.logger, onItemEvent: (e) => ref.rt?.onItemEvent(e) ?? 'deferred' });
  const serve = await startServe({
    jobs,
    config,
    db,
    client,
    logger: w.logger,
    port: 0,
    host: '127.0.0.1',
    schedule: false,
    routes: { [HOOKS_PATH]: hooks },
  });
  ref.rt = await startRealtime({ db, client, config, logger: w.logger, ...(callbackBase ? { callbackBase } : {}) });
  return {
    async close() {
      await ref.rt?.close();
      await serve.close();
      await client.close();
      await db.destroy();
    },
  };
}

/** The platform's item subscriptions as "listID/eventType" keys, sorted. */
async function platformHooks(w: World): Promise<string[]> {
  return (await w.emu.admin.itemHooks()).subscriptions.map((h) => `${h.ListID}/${h.EventType}`).sort();
}

describe('item event subscriptions across replicas', () => {
  it('two replicas started at the same moment, five times: the platform holds exactly one subscription per list and event type', async () => {
    const w = (world = await startWorld({ emulator: { items: 20 } }));
    const config = realtimeConfig(w);
    // Slow subscribe answers widen the window in which two starts overlap.
    await w.emu.admin.setFaults({ latencyMs: 150, faultPaths: '/hooks' });
    for (let round = 0; round < 5; round++) {
      const replicas = await Promise.all([startReplica(w, config), startReplica(w, config)]);
      expect(await platformHooks(w), `round ${round}`).toEqual([`${LIST}/3`, `${LIST}/4`]);
      const stored = (await w.t.db('listsync.webhook_subscriptions').whereNotNull('list_name').pluck('platform_id')) as string[];
      const onPlatform = (await w.emu.admin.itemHooks()).subscriptions.map((h) => h.Id);
      expect(stored.sort(), `round ${round}`).toEqual(onPlatform.sort());
      await Promise.all(replicas.map((r) => r.close()));
      // The next round starts from nothing again: removed here and on the platform.
      for (const id of (await w.t.db('listsync.webhook_subscriptions').pluck('id')) as number[])
        await removeSubscription({ db: w.t.db, client: w.client, config }, Number(id));
      expect(await platformHooks(w)).toEqual([]);
    }
  });

  it('a subscription replaced while the platform cannot remove it is kept by ID, and removed at a later start', async () => {
    const w = (world = await startWorld({ emulator: { items: 20 } }));
    const config = realtimeConfig(w);
    const first = await startReplica(w, config, 'https://old.example.com');
    await first.close();
    const old = (await w.emu.admin.itemHooks()).subscriptions.map((h) => h.Id).sort();
    expect(old).toHaveLength(2);

    // The callback address changed; removing the old hooks fails (DELETE .../hooks/{id} answers 5xx).
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: '/hooks/91\\d+$' });
    const second = await startReplica(w, config, 'https://new.example.com');
    await second.close();
    const kept = (await w.t.db('listsync.webhook_unsubscribes').orderBy('platform_id').select('platform_id', 'attempts', 'last_error')) as {
      platform_id: string;
      attempts: number;
      last_error: string | null;
    }[];
    expect(kept.map((k) => k.platform_id)).toEqual(old);
    const current = (await w.t.db('listsync.webhook_subscriptions').whereNotNull('list_name').select('platform_id', 'callback_url')) as {
      platform_id: string;
      callback_url: string;
    }[];
    expect(current).toHaveLength(2);
    expect(current.every((c) => c.callback_url.startsWith('https://new.example.com/hooks/'))).toBe(true);
    expect((await w.emu.admin.itemHooks()).subscriptions).toHaveLength(4);

    // The platform answers again: the next start removes the old ones and forgets them.
    await w.emu.admin.clearFaults();
    const third = await startReplica(w, config, 'https://new.example.com');
    await third.close();
    expect((await w.emu.admin.itemHooks()).subscriptions.map((h) => h.Id).sort()).toEqual(current.map((c) => c.platform_id).sort());
    expect(await w.t.db('listsync.webhook_unsubscribes').select('platform_id')).toEqual([]);
  });
});
