/**
 * A bulk edit on a real-time list: 20,000 items edited at once, the emulator
 * (in a child process, default rate limit 10 requests/s) delivering one
 * callback per item as fast as it can and retrying refused ones as the
 * platform does, to serve's receiver and applier. Prints the seconds until
 * the mirror equals the platform (no scheduled pull), the slowest /healthz
 * answer (probed every 200 ms), deliveries refused and given up.
 * Bars (issue 31): /healthz under 1 s at every probe, 0 refused, 0 given up,
 * equal within 60 s.
 */
import { performance } from 'node:perf_hooks';
import { createClient } from '../src/context.js';
import { createLogger } from '../src/logger.js';
import { startRealtime } from '../src/realtime/index.js';
import { jobs } from '../jobs/index.js';
import { startServe } from '../src/serve/start-serve.js';
import { pullList } from '../src/sync/pull.js';
import { createHookReceiver, HOOKS_PATH } from '../src/webhooks/index.js';
import { parseConfig } from '../src/config.js';
import { benchDatabase, emulatorProcess } from './support.js';

const ITEMS = 20_000;

export default async function realtimeBurstBench(): Promise<Record<string, string | number>> {
  const b = await benchDatabase('rtburst');
  const emu = await emulatorProcess(['--items', String(ITEMS)]);
  try {
    return await measure(b, emu);
  } finally {
    await emu.stop();
    await b.drop();
  }
}

async function measure(
  b: Awaited<ReturnType<typeof benchDatabase>>,
  emu: Awaited<ReturnType<typeof emulatorProcess>>,
): Promise<Record<string, string | number>> {
  const admin = emu.admin;
  const logger = createLogger({ level: 'warn' });
  const withServe = parseConfig({
    platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey },
    database: { url: b.url, schema: 'mirror' },
    lists: [{ name: 'orders', appID: 'demo', listID: 'orders', realtime: true }],
    serve: { publicUrl: 'https://sync.example.com' },
  });
  const client = createClient(withServe, logger, b.db);
  const deps = { db: b.db, client, config: withServe, logger };
  await pullList(deps, withServe.lists[0]!);
  const ref: { rt?: Awaited<ReturnType<typeof startRealtime>> } = {};
  const answered = { new: 0, duplicate: 0, refused: 0 };
  const hooks = createHookReceiver({
    ...deps,
    onItemEvent: (e) => ref.rt?.onItemEvent(e) ?? 'deferred',
    onOutcome: (o) => void (o.result === 'accepted' ? answered[o.duplicate ? 'duplicate' : 'new']++ : answered.refused++),
  });
  const serve = await startServe({
    jobs,
    ...deps,
    port: 0,
    host: '127.0.0.1',
    schedule: false,
    routes: { [HOOKS_PATH]: hooks },
    health: async () => ref.rt!.health(),
  });
  ref.rt = await startRealtime({ ...deps, callbackBase: serve.url });
  const probes: number[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t = performance.now();
      try {
        await (await fetch(`${serve.url}/healthz`, { signal: AbortSignal.timeout(10_000) })).text();
        probes.push(performance.now() - t);
      } catch {
        probes.push(Infinity);
      }
      await new Promise((ok) => setTimeout(ok, 200));
    }
  })();
  try {
    const t = performance.now();
    const step = (what: string) => console.error(`  ${((performance.now() - t) / 1000).toFixed(1)} s: ${what}`);
    await admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk edit' } });
    const bulkEditAnswered = (performance.now() - t) / 1000;
    let equalAfter = NaN;
    while (performance.now() - t < 120_000) {
      const { stats } = await admin.itemHooks();
      const open = Number(
        ((await b.db.raw('select count(*) as n from listsync.webhook_inbox where processed_at is null')) as { rows: { n: string }[] })
          .rows[0]!.n,
      );
      step(`pending deliveries ${stats.pending}, refused ${stats.refused}, unapplied ${open}`);
      if (stats.pending === 0 && open === 0 && !ref.rt.applier.busy() && (await mirrorEqual())) {
        equalAfter = (performance.now() - t) / 1000;
        break;
      }
      await new Promise((ok) => setTimeout(ok, 250));
    }
    probing = false;
    await probe;
    const { stats } = await admin.itemHooks();
    return {
      items: ITEMS,
      'seconds until the bulk edit was answered': Math.round(bulkEditAnswered * 10) / 10,
      'seconds until the mirror equals the platform': equalAfter,
      'slowest /healthz answer (ms)': Math.round(Math.max(...probes)),
      '/healthz probes': probes.length,
      'deliveries refused': stats.refused,
      'callbacks answered 200 (new)': answered.new,
      'callbacks answered 200 (a delivery again)': answered.duplicate,
      'callbacks answered 4xx/503': answered.refused,
      'deliveries given up': stats.abandoned,
      deliveries: stats.delivered,
      'most callback connections the emulator had open': stats.peakSockets,
      'most connections serve held': serve.connections().peak,
    };
  } finally {
    probing = false;
    await ref.rt.close();
    await serve.close();
    await client.close();
  }

  async function mirrorEqual(): Promise<boolean> {
    const items = (await admin.exportList('demo', 'orders')).items;
    const rows = (await b.db('mirror.orders').whereNull('_deleted_at').select('id', 'row_version')) as {
      id: string;
      row_version: string;
    }[];
    const versions = new Map(rows.map((r) => [String(r.id), Number(r.row_version)]));
    return rows.length === items.length && items.every((it) => versions.get(String(it.ListDataID)) === Number(it.RowVersion));
  }
}
