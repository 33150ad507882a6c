/**
 * A restart in the middle of a burst (src/realtime/applier.ts,
 * src/realtime/backlog-pull.ts, src/webhooks/receiver.ts): the real
 * `listsync serve` as a child process, a real-time list with a pull scheduled
 * every 2 s, a bulk edit of every item; SIGTERM once a pull runs and part of
 * the callbacks are stored, `serve` started again at once. It exits 0 within
 * 10 s, and after the restart every stored event is applied and the mirror
 * equals the platform; the callbacks cost a few summary log lines, not one
 * each.
 * (20,000 events on a 30,000-item list: npm run bench realtime-restart.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/embedded-db.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { BIN, childEnv } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { until } from './support.js';

/** As many as this file can bear beside others on two cores: the emulator opens every delivery's connection in this process. */
const ITEMS = 1000;

interface Serve {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

describe('a restart in the middle of a burst', () => {
  let dir: string;
  let t: TestDatabase;
  let emu: RunningEmulator;
  let configFile: string;
  const started: Serve[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'listsync-restart-burst-'));
    t = await createTestDatabase();
    emu = await startEmulator({ port: 0, sample: true, items: ITEMS, rateLimit: { burst: 50, perSecond: 50 } });
    const port = await freePort();
    configFile = join(dir, 'listsync.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        platform: { baseUrl: emu.baseUrl, requestsPerSecond: 40 },
        database: { url: t.url },
        // A pull every 2 s: one is running or queued whenever the burst arrives. Small pages make it slow.
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', realtime: true, pageSize: 20, schedule: { pull: '*/2 * * * * *' } }],
        serve: { host: '127.0.0.1', port, publicUrl: `http://127.0.0.1:${port}`, console: 'off' },
      }),
    );
  }, 120_000);
  afterAll(async () => {
    for (const s of started) s.child.kill('SIGKILL');
    await emu?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startServe(): Promise<Serve> {
    const child = spawn(process.execPath, [BIN, '--config', configFile, 'serve'], {
      cwd: dir,
      env: childEnv({ PLATFORM_API_KEY: emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    const s = { child, output: () => out, exited };
    started.push(s);
    await until('serve to listen', async () => out.includes('listsync serve on'), 60_000);
    return s;
  }

  /** Mirror rows whose version is not the platform's (missing ones included). */
  async function behind(): Promise<number> {
    const items = (await emu.admin.exportList('demo', 'orders')).items;
    const rows = (await t.db('mirror.orders').whereNull('_deleted_at').select('id', 'row_version')) as {
      id: string;
      row_version: string;
    }[];
    const versions = new Map(rows.map((r) => [String(r.id), Number(r.row_version)]));
    return items.filter((it) => versions.get(String(it.ListDataID)) !== Number(it.RowVersion)).length;
  }

  const inbox = async (): Promise<{ stored: number; open: number }> =>
    (
      (await t.db.raw(
        'select count(*)::int as stored, (count(*) filter (where processed_at is null))::int as open from listsync.webhook_inbox',
      )) as { rows: { stored: number; open: number }[] }
    ).rows[0]!;

  it(`SIGTERM with ${ITEMS} item events arriving and a pull running: exit 0 within 10 s; after a restart every event is applied and the mirror equal`, async () => {
    const first = await startServe();
    await until(
      'the first load',
      async () => (await t.db.schema.withSchema('mirror').hasTable('orders')) && (await behind()) === 0,
      60_000,
    );
    await emu.admin.setFaults({ latencyMs: 100 });
    await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk edit' } });
    await until(
      'a pull running with callbacks stored',
      async () =>
        Boolean(await t.db('listsync.sync_runs').where({ job: 'pull', status: 'running' }).first('id')) &&
        (await inbox()).stored >= ITEMS / 4,
      60_000,
    );
    const stopAt = Date.now();
    first.child.kill('SIGTERM');
    expect(await first.exited, first.output().slice(-4000)).toBe(0);
    expect(Date.now() - stopAt, first.output().slice(-4000)).toBeLessThan(10_000);

    const again = await startServe();
    const restarted = Date.now();
    await until(
      'every event applied and the mirror equal',
      async () => (await emu.admin.itemHooks()).stats.pending === 0 && (await inbox()).open === 0 && (await behind()) === 0,
      120_000,
    );
    expect(Date.now() - restarted).toBeLessThan(120_000);
    const lines = again.output().split('\n');
    expect(lines.filter((l) => l.includes('duplicate delivery"'))).toEqual([]);
    // Hundreds of callbacks cost a few lines: summaries, not a line each.
    for (const out of [first.output(), again.output()])
      expect(out.split('\n').filter((l) => l.includes('"msg":"webhook event')).length).toBeLessThan(30);
    expect(lines.filter((l) => l.includes('EMFILE'))).toEqual([]);
    await emu.admin.clearFaults();
    again.child.kill('SIGTERM');
    expect(await again.exited, again.output().slice(-4000)).toBe(0);
  }, 300_000);
});
