/**
 * A restart in the middle of a burst: a real-time list of 30,000 items at
 * 300 ms latency (the emulator in a child process, 10 requests/s), a
 * scheduled pull every 5 s, `listsync serve` as a child process. A bulk edit
 * of 20,000 items; once a pull is running and part of the callbacks are
 * stored, SIGTERM; `serve` started again at once. Prints the seconds from the
 * restart until every stored event is applied and the mirror equals the
 * platform, how long the SIGTERM took, what the log of the second process
 * holds (lines, lines per duplicate delivery, EMFILE), and the deliveries
 * refused and given up.
 * Bars (issue 39): equal within 120 s of the restart, exit within 10 s, no
 * EMFILE, no event left unapplied.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseConfig } from '../src/config.js';
import { createClient } from '../src/context.js';
import { freePort } from '../src/embedded-db.js';
import { EmulatorAdminClient } from '../src/emulator/index.js';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { benchDatabase, emulatorProcess, type BenchDb } from './support.js';

const ITEMS = Number(process.env.BENCH_RESTART_ITEMS ?? 30_000);
const EDITED = Number(process.env.BENCH_RESTART_EDITED ?? 20_000);
const BIN = fileURLToPath(new URL('../bin/listsync.js', import.meta.url));

interface Serve {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export default async function realtimeRestartBench(): Promise<Record<string, string | number>> {
  const b = await benchDatabase('rtrestart');
  const emu = await emulatorProcess(['--items', String(ITEMS), '--latency', '300']);
  const dir = mkdtempSync(join(tmpdir(), 'listsync-rtrestart-'));
  const running: Serve[] = [];
  try {
    return await measure(b, emu, dir, running);
  } finally {
    for (const s of running) s.child.kill('SIGKILL');
    await emu.stop();
    await b.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(
  b: BenchDb,
  emu: Awaited<ReturnType<typeof emulatorProcess>>,
  dir: string,
  running: Serve[],
): Promise<Record<string, string | number>> {
  const admin = emu.admin;
  const port = await freePort();
  const raw = {
    platform: { baseUrl: emu.baseUrl },
    database: { url: b.url, schema: 'mirror' },
    lists: [{ name: 'orders', appID: 'demo', listID: 'orders', realtime: true, schedule: { pull: '*/5 * * * * *' } }],
    serve: { host: '127.0.0.1', port, publicUrl: `http://127.0.0.1:${port}`, console: 'off' },
  };
  const configFile = join(dir, 'listsync.config.json');
  writeFileSync(configFile, JSON.stringify(raw));
  const config = parseConfig({ ...raw, platform: { ...raw.platform, apiKey: emu.apiKey } });
  const client = createClient(config, silentLogger(), b.db);
  await pullList({ db: b.db, client, config, logger: silentLogger() }, config.lists[0]!);
  await client.close();

  const start = async (): Promise<Serve> => {
    const s = await startServe(configFile, dir, emu.apiKey);
    running.push(s);
    return s;
  };
  const t = performance.now();
  const step = (what: string) => console.error(`  ${((performance.now() - t) / 1000).toFixed(1)} s: ${what}`);
  const first = await start();
  step('serve listening');
  await admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk edit' }, count: EDITED });
  step('bulk edit made');
  await waitUntil(async () => (await pullRunning(b)) && (await inboxCounts(b)).stored >= EDITED / 4, 120_000);
  const atStop = await inboxCounts(b);
  step(`SIGTERM with a pull running, ${atStop.stored} events stored, ${atStop.open} not applied`);
  const stopAt = performance.now();
  first.child.kill('SIGTERM');
  const code = await first.exited;
  const exitMs = performance.now() - stopAt;
  const slow = first
    .output()
    .split('\n')
    .filter((l) => l.includes('shutdown did not end in time') || l.includes('"level":"warn"'));
  if (exitMs > 5_000) console.error(`  a slow exit; serve's warnings:\n${slow.slice(-20).join('\n')}`);
  const again = await start();
  const restartedAt = performance.now();
  const atRestart = await inboxCounts(b);
  let equalAfter = NaN;
  while (performance.now() - restartedAt < 180_000) {
    const { stats } = await admin.itemHooks();
    const open = (await inboxCounts(b)).open;
    step(`pending deliveries ${stats.pending}, refused ${stats.refused}, unapplied ${open}`);
    if (stats.pending === 0 && open === 0 && (await mirrorEqual(b, admin))) {
      equalAfter = (performance.now() - restartedAt) / 1000;
      break;
    }
    await new Promise((ok) => setTimeout(ok, 1000));
  }
  again.child.kill('SIGTERM');
  await again.exited;
  const log = again.output().split('\n');
  const { stats } = await admin.itemHooks();
  return {
    items: ITEMS,
    edited: EDITED,
    'events stored at SIGTERM': atStop.stored,
    'events not applied at the restart': atRestart.open,
    'SIGTERM exit code': code ?? -1,
    'SIGTERM to exit (ms)': Math.round(exitMs),
    'seconds from the restart until the mirror equals the platform': equalAfter,
    'events left unapplied': (await inboxCounts(b)).open,
    'log lines after the restart': log.length,
    'log lines naming a duplicate delivery': log.filter((l) => /duplicate delivery/.test(l)).length,
    'EMFILE in the log': log.filter((l) => l.includes('EMFILE')).length,
    'deliveries refused': stats.refused,
    'deliveries given up': stats.abandoned,
    deliveries: stats.delivered,
  };
}

async function startServe(configFile: string, cwd: string, apiKey: string): Promise<Serve> {
  const child = spawn(process.execPath, [BIN, '--config', configFile, 'serve'], {
    cwd,
    env: { ...process.env, PLATFORM_API_KEY: apiKey, LISTSYNC_LOG_LEVEL: 'info', LISTSYNC_CONFIG: undefined, DATABASE_URL: undefined },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  await waitUntil(async () => out.includes('listsync serve on'), 60_000);
  return { child, output: () => out, exited };
}

async function waitUntil(fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await fn())) {
    if (performance.now() > deadline) throw new Error('timed out');
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

async function pullRunning(b: BenchDb): Promise<boolean> {
  return Boolean(await b.db('listsync.sync_runs').where({ job: 'pull', status: 'running' }).first('id'));
}

async function inboxCounts(b: BenchDb): Promise<{ stored: number; open: number }> {
  const r = (await b.db.raw(
    'select count(*)::int as stored, (count(*) filter (where processed_at is null))::int as open from listsync.webhook_inbox',
  )) as { rows: { stored: number; open: number }[] };
  return r.rows[0]!;
}

async function mirrorEqual(b: BenchDb, admin: EmulatorAdminClient): Promise<boolean> {
  const items = (await admin.exportList('demo', 'orders')).items;
  const rows = (await b.db('mirror.orders').whereNull('_deleted_at').select('id', 'row_version')) as { id: string; row_version: string }[];
  const versions = new Map(rows.map((r) => [String(r.id), Number(r.row_version)]));
  return rows.length === items.length && items.every((it) => versions.get(String(it.ListDataID)) === Number(it.RowVersion));
}
