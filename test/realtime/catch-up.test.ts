/**
 * Catch-up after a gap (src/realtime/catch-up.ts, wired in
 * src/commands/serve-command.ts): PostgreSQL stops for 10 s under `listsync serve`
 * with edits flowing on a real-time list. Callbacks are refused meanwhile
 * (503: nothing can be stored) and the emulator gives some up, as the
 * platform does; once the database is back, an incremental pull catches the
 * list up without a scheduled pull, and `status` says when the gap was and
 * when it was caught up. The server is a private one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrateLatest, type Knex } from '../../src/db.js';
import { freePort, startEmbeddedDb, type EmbeddedDb } from '../../src/embedded-db.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { BIN, childEnv, runCli } from '../helpers/cli.js';
import { until } from './support.js';

const ITEMS = 300;

describe('catch-up after a gap', () => {
  let dir: string;
  let pg: EmbeddedDb;
  let emu: RunningEmulator;
  let db: Knex;
  let configFile: string;
  let serve: ChildProcess | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'listsync-catchup-'));
    pg = await startEmbeddedDb({ dir: join(dir, 'data'), persistent: true });
    db = createDb({ url: pg.url, poolMax: 2 });
    await migrateLatest(db);
    emu = await startEmulator({ port: 0, sample: true, items: ITEMS, rateLimit: { burst: 100, perSecond: 100 } });
    const port = await freePort();
    configFile = join(dir, 'listsync.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        platform: { baseUrl: emu.baseUrl, requestsPerSecond: 50 },
        database: { url: pg.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', realtime: true }],
        serve: { host: '127.0.0.1', port, publicUrl: `http://127.0.0.1:${port}`, console: 'off' },
      }),
    );
  }, 120_000);
  afterAll(async () => {
    serve?.kill('SIGKILL');
    await db?.destroy();
    await emu?.close();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Mirror rows whose version is not the platform's (missing ones included). */
  async function behind(): Promise<number> {
    const items = (await emu.admin.exportList('demo', 'orders')).items;
    const rows = (await db('mirror.orders').whereNull('_deleted_at').select('id', 'row_version')) as { id: string; row_version: string }[];
    const versions = new Map(rows.map((r) => [String(r.id), Number(r.row_version)]));
    return items.filter((it) => versions.get(String(it.ListDataID)) !== Number(it.RowVersion)).length;
  }

  it('PostgreSQL stopped for 10 s with edits flowing: the mirror equals the platform within 60 s after it returns', async () => {
    const child = spawn(process.execPath, [BIN, '--config', configFile, 'serve'], {
      cwd: dir,
      env: childEnv({ PLATFORM_API_KEY: emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    serve = child;
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await until('serve to listen', async () => output.includes('listsync serve on'), 60_000);
    // The start's catch-up loads the list (no schedule).
    await until('the first load', async () => (await db.schema.withSchema('mirror').hasTable('orders')) && (await behind()) === 0, 60_000);

    const ids = (await emu.admin.exportList('demo', 'orders')).items.map((it) => String(it.ListDataID));
    let editing = true;
    let edits = 0;
    const editor = (async () => {
      while (editing) {
        await emu.admin.editItem('demo', 'orders', ids[edits % ids.length]!, { Data: { Text4: `edit ${edits}` } });
        edits++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await new Promise((r) => setTimeout(r, 2000));
    await db.destroy();
    await pg.stop();
    await new Promise((r) => setTimeout(r, 10_000));
    pg = await startEmbeddedDb({ dir: join(dir, 'data'), persistent: true, port: pg.port });
    db = createDb({ url: pg.url, poolMax: 2 });
    const back = Date.now();
    await new Promise((r) => setTimeout(r, 2000));
    editing = false;
    await editor;

    // Edits made while the database was away were refused and some given up: only a pull brings them in.
    const { stats } = await emu.admin.itemHooks();
    expect(stats.refused).toBeGreaterThan(0);
    expect(stats.abandoned).toBeGreaterThan(0);
    await until('the mirror to equal the platform', async () => (await behind()) === 0, 60_000);
    expect(Date.now() - back).toBeLessThan(60_000);
    // The mirror can be equal before the catch-up pull has recorded itself: wait for the record.
    type Gap = { last_gap_reason: string; caught_up_at: Date | null };
    const readGap = async () => (await db('listsync.realtime_stats').where({ list_name: 'orders' }).first()) as Gap | undefined;
    await until(
      'the refused callbacks caught up',
      async () => {
        const g = await readGap();
        return g?.last_gap_reason === 'callbacks refused' && g.caught_up_at !== null;
      },
      30_000,
    );
    const gap = (await readGap())!;
    expect(gap.last_gap_reason).toBe('callbacks refused');
    expect(gap.caught_up_at).not.toBeNull();
    const status = await runCli(['--config', configFile, 'status'], { cwd: dir, env: { PLATFORM_API_KEY: emu.apiKey } });
    expect(status.stdout).toMatch(/orders: last gap .* \(callbacks refused\), caught up .* by an incremental pull/);

    child.kill('SIGTERM');
    expect(await exited, output.slice(-2000)).toBe(0);
    serve = undefined;
  }, 180_000);

  /** `listsync serve` in a child process, once it listens. */
  async function startServeChild(): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
    const child = spawn(process.execPath, [BIN, '--config', configFile, 'serve'], {
      cwd: dir,
      env: childEnv({ PLATFORM_API_KEY: emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    serve = child;
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await until('serve to listen', async () => out.includes('listsync serve on'), 60_000);
    return { child, output: () => out, exited };
  }

  it('SIGTERM during a bulk edit with a pull running: exit 0 within 10 s; after a restart everything is applied', async () => {
    // Small pages and slow answers: the start's catch-up pull of a bulk edit takes several seconds.
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as { lists: Record<string, unknown>[] };
    config.lists[0]!.pageSize = 10;
    writeFileSync(configFile, JSON.stringify(config));
    await emu.admin.setFaults({ latencyMs: 200 });
    await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'before the start' } });
    const first = await startServeChild();
    await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk edit' } });
    await until(
      'a pull running',
      async () => Boolean(await db('listsync.sync_runs').where({ job: 'pull', status: 'running' }).first('id')),
      30_000,
    );
    const t = Date.now();
    first.child.kill('SIGTERM');
    expect(await first.exited, first.output().slice(-2000)).toBe(0);
    // A slow exit shows what serve was doing meanwhile.
    expect(Date.now() - t, first.output().slice(-4000)).toBeLessThan(10_000);
    expect(await db('listsync.sync_runs').where({ status: 'running' }).first('id')).toBeUndefined();

    await emu.admin.clearFaults();
    const again = await startServeChild();
    await until('the mirror to equal the platform', async () => (await behind()) === 0, 60_000);
    again.child.kill('SIGTERM');
    expect(await again.exited, again.output().slice(-2000)).toBe(0);
    serve = undefined;
  }, 180_000);
});
