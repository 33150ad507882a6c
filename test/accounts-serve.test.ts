/**
 * One `listsync serve` (the real binary) over a config of two accounts, each
 * on an emulator of its own at the account's real limit: pulls of both
 * accounts' lists, queued with `listsync pull --queue`, run in the one serve
 * with each account's client and budget (no sliding second over 10 on either
 * platform, no 429, /metrics naming the account); and with one account's
 * platform down (it takes connections and never answers), its jobs hold at
 * most `platform.maxConcurrentJobs` of the worker's slots, so the other
 * account's runs go on as if it were up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulatorProcess, type EmulatorProcess } from '../src/emulator/child-process.js';
import type { RequestLogEntry } from '../src/emulator/request-log.js';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

const KEYS = { ACME_KEY: 'acme-key-0001', GLOBEX_KEY: 'globex-key-0002' };
let acme: EmulatorProcess;
let globex: EmulatorProcess;
let t: TestDatabase;
let dir: string;

beforeAll(async () => {
  [acme, globex, t] = await Promise.all([
    // Each platform in a process of its own, as a real one is: a handler held back by this test
    // process's own work would count several requests at once.
    startEmulatorProcess(BIN, ['--items', '2000', '--api-key', KEYS.ACME_KEY]),
    startEmulatorProcess(BIN, ['--items', '2000', '--api-key', KEYS.GLOBEX_KEY]),
    createTestDatabase(),
  ]);
  dir = mkdtempSync(join(tmpdir(), 'listsync-accounts-serve-'));
}, 60_000);

afterAll(async () => {
  await Promise.all([acme?.stop(), globex?.stop(), t?.drop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function lists(prefix: string, count: number, extra: Record<string, unknown> = {}): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}_${i + 1}`,
    appID: 'demo',
    listID: 'orders',
    pageSize: 100,
    ...extra,
  }));
}

function writeConfig(name: string, accounts: unknown[]): string {
  const file = join(dir, name);
  // Four slots in the one worker; nothing scheduled: the jobs are the ones queued.
  const serve = { host: '127.0.0.1', console: 'off', workers: 4 };
  writeFileSync(
    file,
    JSON.stringify({
      database: { url: t.url, reportingSchema: null },
      accounts,
      serve,
      users: { enabled: false },
      directory: { enabled: false },
    }),
  );
  return file;
}

/** `listsync serve` until `stop()`; its URL once it listens. */
async function serve(file: string): Promise<{ url: string; child: ChildProcess; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, '--config', file, 'serve', '--port', '0'], {
    env: childEnv(KEYS),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /listsync serve on (\S+) /.exec(out);
      if (m) {
        clearInterval(timer);
        resolve(m[1]!);
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`serve exited ${code}: ${out}`));
    });
  });
  return {
    url,
    child,
    stop: () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

interface Run {
  list_name: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
}

async function runsOf(names: readonly string[]): Promise<Run[]> {
  return (await t.db('listsync.sync_runs').whereIn('list_name', names).where({ job: 'pull' }).orderBy('id')) as Run[];
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function maxPerSlidingSecond(entries: readonly RequestLogEntry[]): number {
  const at = entries.map((e) => e.startedAt).sort((a, b) => a - b);
  let max = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[i]! - at[j]! >= 1000) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}

describe('serve over two accounts', () => {
  it("runs both accounts' lists in one serve, each within its own limit, and /metrics names each list's account", async () => {
    const file = writeConfig('two.json', [
      { name: 'acme', platform: { baseUrl: acme.baseUrl, apiKey: '${ACME_KEY}' }, lists: lists('acme', 2) },
      { name: 'globex', platform: { baseUrl: globex.baseUrl, apiKey: '${GLOBEX_KEY}' }, lists: lists('globex', 2) },
    ]);
    const queued = await runCli(['--config', file, 'pull', '--queue'], { env: KEYS });
    expect(queued.code, queued.stderr).toBe(0);
    await Promise.all([acme.admin.clearRequests(), globex.admin.clearRequests()]);
    const s = await serve(file);
    const names = ['acme_1', 'acme_2', 'globex_1', 'globex_2'];
    try {
      await until('four succeeded pulls', async () => (await runsOf(names)).filter((r) => r.status === 'succeeded').length === 4, 90_000);
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/listsync_list_info\{list="globex_1",account="globex",/);
      expect(metrics).toMatch(/listsync_platform_requests_total\{account="acme",endpoint="items\/query",outcome="ok"\} [1-9]/);
      expect(metrics).toMatch(/listsync_platform_requests_total\{account="globex",endpoint="items\/query",outcome="ok"\} [1-9]/);
      expect(metrics).toMatch(/listsync_request_budget_per_second\{account="globex"\} 10/);
    } finally {
      expect(await s.stop()).toBe(0);
    }
    for (const name of names) {
      const [{ n }] = (await t.db.raw(`select count(*)::int as n from mirror."${name}"`)).rows as [{ n: number }];
      expect(n, name).toBe(2000);
    }
    const [a, g] = await Promise.all([acme.admin.requests(), globex.admin.requests()]);
    const [sa, sg] = await Promise.all([acme.admin.stats(), globex.admin.stats()]);
    expect([sa.rateLimited, sg.rateLimited]).toEqual([0, 0]);
    expect(sa.maxPerSlidingSecond).toBeLessThanOrEqual(10);
    expect(sg.maxPerSlidingSecond).toBeLessThanOrEqual(10);
    expect([...a, ...g].filter((e) => e.status !== 200)).toEqual([]);
    // Each account spent its own budget: together they went past one account's limit in some second.
    expect(maxPerSlidingSecond([...a, ...g])).toBeGreaterThan(12);
  }, 150_000);

  it("one account's platform down holds at most its cap of the worker's slots: the other account's runs go on", async () => {
    const held: Socket[] = [];
    const down: Server = createServer((sock) => void held.push(sock));
    await new Promise<void>((ok) => down.listen(0, '127.0.0.1', ok));
    const port = (down.address() as { port: number }).port;
    // The down account's four lists are queued first; with no cap they would take all four slots.
    const file = writeConfig('down.json', [
      {
        name: 'acme',
        platform: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: '${ACME_KEY}', timeoutMs: 20_000, retries: 0 },
        lists: lists('down', 4),
      },
      { name: 'globex', platform: { baseUrl: globex.baseUrl, apiKey: '${GLOBEX_KEY}' }, lists: lists('up', 4, { pageSize: 1000 }) },
    ]);
    const queued = await runCli(['--config', file, 'pull', '--queue'], { env: KEYS });
    expect(queued.code, queued.stderr).toBe(0);
    const s = await serve(file);
    const up = ['up_1', 'up_2', 'up_3', 'up_4'];
    try {
      const started = Date.now();
      await until(
        'the up account to pull its four lists',
        async () => (await runsOf(up)).filter((r) => r.status === 'succeeded').length === 4,
        60_000,
      );
      // Well before any request to the down platform could time out (20 s).
      expect(Date.now() - started).toBeLessThan(15_000);
      const down4 = await runsOf(['down_1', 'down_2', 'down_3', 'down_4']);
      // At most its cap (2 by default with two accounts) of the down account's jobs started, none finished.
      expect(down4.length).toBeLessThanOrEqual(2);
      expect(down4.every((r) => r.finished_at === null)).toBe(true);
    } finally {
      for (const sock of held) sock.destroy();
      await s.stop();
      await new Promise((ok) => down.close(ok));
    }
  }, 150_000);
});
