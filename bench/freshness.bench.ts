/**
 * Real time freshness: the emulator (real rate limit, item event delivery with
 * a delay, jitter that reorders, duplicates; refused deliveries are retried) takes 20 changes/s on a seeded list for BENCH_FRESHNESS_SECONDS
 * (default 60): edits, with a create and a delete each second. `serve`'s
 * realtime part applies the callbacks. A trigger on the mirror notes when each
 * version (or delete) lands; the figures are seconds from the change on the
 * platform to the mirror row, and API requests spent. Bars: p95 <= 2 s, the
 * mirror equal to the platform at the end without a pull, <= 2 requests/s.
 */
import { startEmulator } from '../src/emulator/index.js';
import { SAMPLE_FIELDS } from '../src/emulator/index.js';
import { silentLogger } from '../src/logger.js';
import { startRealtime, type Realtime } from '../src/realtime/index.js';
import { jobs } from '../jobs/index.js';
import { startServe } from '../src/serve/start-serve.js';
import { pullList } from '../src/sync/pull.js';
import { createHookReceiver, HOOKS_PATH } from '../src/webhooks/index.js';
import { benchClient, benchDatabase } from './support.js';
import { parseConfig } from '../src/config.js';

const APP = 'demo';
const LIST = 'orders';

export default async function run(): Promise<Record<string, string | number>> {
  const seconds = Number(process.env.BENCH_FRESHNESS_SECONDS ?? 60);
  const perSecond = 20;
  const emu = await startEmulator({ port: 0, sample: true, items: 5000 });
  const b = await benchDatabase('freshness');
  const logger = silentLogger();
  let rt: Realtime | undefined;
  try {
    const config = parseConfig({
      platform: { baseUrl: emu.baseUrl, apiKey: emu.apiKey },
      database: { url: b.url, schema: 'mirror' },
      lists: [{ name: LIST, appID: APP, listID: LIST, realtime: true }],
      serve: { publicUrl: 'https://sync.example.com' },
    });
    const client = benchClient(config, b.db);
    await pullList({ db: b.db, client, config, logger }, config.lists[0]!);
    await noteLandings(b.db);

    const ref: { rt?: Realtime } = {};
    const hooks = createHookReceiver({ db: b.db, config, logger, onItemEvent: (e) => ref.rt?.onItemEvent(e) ?? 'deferred' });
    const serve = await startServe({
      jobs,
      config,
      db: b.db,
      client,
      logger,
      port: 0,
      host: '127.0.0.1',
      schedule: false,
      routes: { [HOOKS_PATH]: hooks },
    });
    rt = ref.rt = await startRealtime({ db: b.db, client, config, logger, callbackBase: serve.url });
    await emu.admin.setItemDelivery({ delayMs: 100, jitterMs: 400, duplicateRate: 0.2, retryDelayMs: 250 });
    await emu.admin.clearRequests();
    const statsBefore = client.stats();

    // The changes: at a steady 20/s; a create and a delete each second, edits otherwise.
    const live = (await emu.admin.exportList(APP, LIST)).items.map((i) => String(i.ListDataID));
    const changes: { id: string; version: number | null; at: number }[] = [];
    const started = Date.now();
    let n = 0;
    for (let i = 0; i < seconds * perSecond; i++) {
      const due = started + (i * 1000) / perSecond;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const at = Date.now();
      if (i % perSecond === 7) {
        const id = await emu.admin.createItem(APP, LIST, { Data: { Title: `bench ${i}` } });
        live.push(id);
        changes.push({ id, version: 1, at });
      } else if (i % perSecond === 13) {
        const id = live.splice((n * 7919) % live.length, 1)[0]!;
        await emu.admin.deleteItem(APP, LIST, id);
        changes.push({ id, version: null, at });
      } else {
        const id = live[(n++ * 104_729) % live.length]!;
        const version = await emu.admin.editItem(APP, LIST, id, { Data: { [SAMPLE_FIELDS.status]: `edit ${i}` } });
        changes.push({ id, version, at });
      }
    }
    const changeSeconds = (Date.now() - started) / 1000;

    // Settle: nothing left to deliver, nothing queued.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { stats } = await emu.admin.itemHooks();
      const open = (await b.db('listsync.webhook_inbox').whereNull('processed_at').count({ n: '*' })) as { n: string }[];
      if ((stats.pending === 0 && Number(open[0]!.n) === 0 && !rt.applier.busy()) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const requests = client.stats().requests - statsBefore.requests;
    const { stats } = await emu.admin.itemHooks();

    const latencies = await landingLatencies(b.db, changes);
    const missing = latencies.filter((l) => l === null).length;
    const sorted = latencies.filter((l): l is number => l !== null).sort((x, y) => x - y);
    const pct = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
    const equal = await mirrorEqualsPlatform(b.db, await emu.admin.exportList(APP, LIST));

    await rt.close();
    await serve.close();
    await client.close();
    return {
      'changes (edits, creates, deletes)': changes.length,
      'changes/s': Number((changes.length / changeSeconds).toFixed(2)),
      'events delivered (incl. duplicates)': stats.delivered,
      'refused deliveries (retried)': stats.refused,
      'p50 s (change -> mirror)': Number((pct(50) / 1000).toFixed(3)),
      'p95 s': Number((pct(95) / 1000).toFixed(3)),
      'max s': Number((sorted[sorted.length - 1]! / 1000).toFixed(3)),
      'changes never seen in the mirror': missing,
      'API requests': requests,
      'requests per 1000 events': Number(((requests / Math.max(1, stats.events)) * 1000).toFixed(1)),
      'requests/s (bar <= 2)': Number((requests / changeSeconds).toFixed(2)),
      'mirror equals platform (no pull)': equal ? 'yes' : 'NO',
      'p95 <= 2 s': pct(95) <= 2000 ? 'yes' : 'NO',
    };
  } finally {
    await rt?.close();
    await emu.close();
    await b.drop();
  }
}

/** A trigger that notes when each version of a row, or its delete, lands in the mirror. */
async function noteLandings(db: import('../src/db.js').Knex): Promise<void> {
  await db.raw('create table public.landings (id text, row_version bigint, deleted boolean, at timestamptz default clock_timestamp())');
  await db.raw(`create function public.note_landing() returns trigger language plpgsql as $$
    begin
      insert into public.landings (id, row_version, deleted) values (new.id, new.row_version, new._deleted_at is not null);
      return new;
    end $$`);
  await db.raw(
    'create trigger zz_note_landing after insert or update on mirror.orders for each row execute function public.note_landing()',
  );
}

/** Per change: ms from the change to the first landing at or past its version (or its delete); null if it never landed. */
async function landingLatencies(
  db: import('../src/db.js').Knex,
  changes: readonly { id: string; version: number | null; at: number }[],
): Promise<(number | null)[]> {
  const rows = (await db.raw(
    `select id, row_version, deleted, (extract(epoch from at) * 1000)::float8 as ms from public.landings order by at`,
  )) as {
    rows: { id: string; row_version: string; deleted: boolean; ms: number }[];
  };
  const byId = new Map<string, { v: number; deleted: boolean; ms: number }[]>();
  for (const r of rows.rows) {
    const list = byId.get(r.id) ?? [];
    list.push({ v: Number(r.row_version), deleted: r.deleted, ms: r.ms });
    byId.set(r.id, list);
  }
  return changes.map((c) => {
    const hit = (byId.get(c.id) ?? []).find((l) => l.ms >= c.at - 5 && (c.version === null ? l.deleted : !l.deleted && l.v >= c.version));
    return hit ? Math.max(0, hit.ms - c.at) : null;
  });
}

async function mirrorEqualsPlatform(db: import('../src/db.js').Knex, exported: { items: Record<string, unknown>[] }): Promise<boolean> {
  const rows = (await db('mirror.orders').whereNull('_deleted_at').select('id', 'row_version')) as { id: string; row_version: string }[];
  const mirror = new Map(rows.map((r) => [r.id, Number(r.row_version)]));
  if (mirror.size !== exported.items.length) return false;
  return exported.items.every((i) => mirror.get(String(i.ListDataID)) === Number(i.RowVersion));
}
