/**
 * The console's budget page counts every request listsync made
 * (src/request-minutes-writer.ts, listsync.request_minutes): the real
 * `listsync serve` as a child process with a real-time list, the catch-up
 * pull, a bulk edit whose callbacks the applier re-reads, one of those
 * re-reads answered 429 and retried. Once serve is quiet, the page's count of
 * the last hour equals the /v1 requests the emulator served, and the re-reads
 * and the retry show under their source.
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
import { until } from '../realtime/support.js';

const TOKEN = 'budget-requests-token-0123456789';

describe('the budget page counts every request', () => {
  let dir: string;
  let t: TestDatabase;
  let emu: RunningEmulator;
  let child: ChildProcess | undefined;
  let out = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'listsync-budget-requests-'));
    t = await createTestDatabase();
    emu = await startEmulator({ port: 0, sample: true, items: 40, rateLimit: { burst: 100, perSecond: 100 } });
    const port = await freePort();
    writeFileSync(
      join(dir, 'listsync.config.json'),
      JSON.stringify({
        platform: { baseUrl: emu.baseUrl, requestsPerSecond: 50 },
        database: { url: t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', realtime: true }],
        serve: { host: '127.0.0.1', port, publicUrl: `http://127.0.0.1:${port}`, console: '127.0.0.1:0' },
      }),
    );
  }, 120_000);
  afterAll(async () => {
    child?.kill('SIGKILL');
    await emu?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

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

  const served = async (): Promise<number> => (await emu.admin.requests()).filter((r) => r.path.startsWith('/v1')).length;

  it('once serve is quiet, the requests of the last hour equal those the emulator served, re-reads and a retry included', async () => {
    child = spawn(process.execPath, [BIN, '--config', join(dir, 'listsync.config.json'), 'serve'], {
      cwd: dir,
      env: childEnv({ PLATFORM_API_KEY: emu.apiKey, LISTSYNC_CONSOLE_TOKEN: TOKEN }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const consoleUrl = await until('the console to listen', async () => /console on (http:\/\/[^\s/]+)/.exec(out)?.[1], 60_000);
    await until(
      'the first load',
      async () => (await t.db.schema.withSchema('mirror').hasTable('orders')) && (await behind()) === 0,
      60_000,
    );
    // The next request is answered 429 once: a re-read of the callbacks below, retried by the client.
    await emu.admin.setFaults({ rateLimitAtRequest: 1 });
    await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'edited' }, count: 10 });
    await until('the edits applied', async () => (await behind()) === 0 && (await emu.admin.faults()).rateLimitAtRequest === null, 60_000);

    const page = async () => {
      const res = await fetch(`${consoleUrl}/budget`, { headers: { authorization: `Bearer ${TOKEN}` } });
      return res.text();
    };
    const total = (body: string) => Number(/<strong>([\d,]+)<\/strong> requests in the last hour/.exec(body)?.[1]?.replace(/,/g, ''));
    // The tally is written every few seconds: the page catches up with the emulator once serve is quiet.
    let last = { page: -1, served: -2 };
    await until(
      'the page to count what the emulator served',
      async () => {
        last = { page: total(await page()), served: await served() };
        return last.page === last.served;
      },
      30_000,
    ).catch(() => undefined);
    expect(last.page, out.slice(-3000)).toBe(last.served);
    const body = await page();
    const log = (await emu.admin.requests()).filter((r) => r.path.startsWith('/v1'));
    expect(log.filter((r) => r.status === 429).length).toBe(1);
    // The re-reads count under `realtime`, with the retry.
    const realtime = /<td>realtime<\/td>\s*<td>(\d+)<\/td>\s*<td>[^<]*<\/td>\s*<td>(\d+)<\/td>/.exec(body);
    expect(realtime, body).not.toBeNull();
    expect(Number(realtime![1])).toBeGreaterThan(0);
    expect(Number(realtime![2])).toBe(1);
    expect(body).toContain('<strong>1</strong> retries');
    // The day's chart per account, and its figures by hour and source: the hour under way holds every request too.
    expect(body).toContain('Requests per hour over the last day, account');
    const hourly = [...body.matchAll(/<td>\d{4}-\d\d-\d\dT\d\d:00<\/td>\s*<td>[a-z_-]+<\/td>\s*<td>(\d+)<\/td>/g)];
    expect(hourly.reduce((s, m) => s + Number(m[1]), 0)).toBe(last.served);
  }, 120_000);
});
