/**
 * `listsync pull` over a config with two accounts, each on an emulator of its
 * own (over HTTP, the account's real limit: 10 requests in any sliding
 * second): both accounts' lists land in the mirror, each account within its
 * own budget, and one account's platform down (it takes connections and never
 * answers) does not hold the other account's lists back.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulatorProcess, type EmulatorProcess } from '../src/emulator/child-process.js';
import type { RequestLogEntry } from '../src/emulator/request-log.js';
import { BIN, runCli } from './helpers/cli.js';
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
  dir = mkdtempSync(join(tmpdir(), 'listsync-accounts-'));
}, 60_000);

afterAll(async () => {
  await Promise.all([acme?.stop(), globex?.stop(), t?.drop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `count` lists of the emulator's sample list, named `<prefix>_1`...: each its own table, 100 items a page. */
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
  writeFileSync(file, JSON.stringify({ database: { url: t.url, reportingSchema: null }, accounts, serve: { console: 'off' } }));
  return file;
}

/** Most requests inside any 1000 ms window. */
function maxPerSlidingSecond(entries: readonly RequestLogEntry[]): number {
  const at = entries.map((e) => e.startedAt).sort((a, b) => a - b);
  let max = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[i]! - at[j]! >= 1000) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}

describe('listsync pull over two accounts', () => {
  it("pulls both accounts' lists, each within its own limit: no sliding second over 10 on either platform, no 429", async () => {
    const file = writeConfig('two.json', [
      { name: 'acme', platform: { baseUrl: acme.baseUrl, apiKey: '${ACME_KEY}' }, lists: lists('acme', 2) },
      { name: 'globex', platform: { baseUrl: globex.baseUrl, apiKey: '${GLOBEX_KEY}' }, lists: lists('globex', 2) },
    ]);
    await Promise.all([acme.admin.clearRequests(), globex.admin.clearRequests()]);
    const r = await runCli(['--config', file, 'pull'], { env: KEYS, timeoutMs: 90_000 });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const name of ['acme_1', 'acme_2', 'globex_1', 'globex_2']) {
      expect(r.stdout).toContain(`${name}: succeeded`);
      const [{ n }] = (await t.db.raw(`select count(*)::int as n from mirror."${name}"`)).rows as [{ n: number }];
      expect(n, name).toBe(2000);
    }
    const [a, g] = await Promise.all([acme.admin.requests(), globex.admin.requests()]);
    const [sa, sg] = await Promise.all([acme.admin.stats(), globex.admin.stats()]);
    expect([sa.rateLimited, sg.rateLimited]).toEqual([0, 0]);
    expect(sa.maxPerSlidingSecond).toBeLessThanOrEqual(10);
    expect(sg.maxPerSlidingSecond).toBeLessThanOrEqual(10);
    // Every request carried its own account's key (an emulator refuses any other with a 401).
    expect([...a, ...g].filter((e) => e.status !== 200)).toEqual([]);
    // The two budgets are the accounts' own: together they went past one account's limit in some second.
    expect(maxPerSlidingSecond([...a, ...g])).toBeGreaterThan(12);
    const budgets = (await t.db('listsync.rate_budget').pluck('account')) as string[];
    expect(budgets.sort()).toEqual(['acme', 'globex']);
  }, 120_000);

  it('check and status name the account of each list; a key one platform refuses is named by its key path', async () => {
    const accounts = [
      { name: 'acme', platform: { baseUrl: acme.baseUrl, apiKey: '${ACME_KEY}' }, lists: lists('acme', 2) },
      { name: 'globex', platform: { baseUrl: globex.baseUrl, apiKey: '${GLOBEX_KEY}' }, lists: lists('globex', 2) },
    ];
    const file = writeConfig('named.json', accounts);
    const check = await runCli(['--config', file, 'check'], { env: KEYS });
    expect(check.stdout).toContain('config: 4 list(s) configured in 2 accounts (acme, globex)');
    expect(check.stdout).toMatch(/^ok +platform acme_1 \(account acme\):/m);
    expect(check.stdout).toMatch(/^ok +platform globex_2 \(account globex\):/m);
    expect(check.code).toBe(0);
    const status = await runCli(['--config', file, 'status'], { env: KEYS });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^list +account +last success/m);
    expect(status.stdout).toMatch(/^globex_1 +globex +\d{4}-/m);

    const wrongKey = writeConfig('wrong-key.json', [
      accounts[0],
      { ...accounts[1], platform: { ...accounts[1]!.platform, apiKey: 'not-the-key' } },
    ]);
    const refused = await runCli(['--config', wrongKey, 'check'], { env: KEYS });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/^ok +platform acme_2 \(account acme\):/m);
    expect(refused.stdout).toMatch(/^FAIL platform globex_1 \(account globex\):.*check accounts\[1\]\.platform\.apiKey/m);
    expect(refused.stdout + refused.stderr).not.toContain('not-the-key');
  }, 60_000);

  it("one account's platform down does not hold the other's lists: they finish before the first of the down account's fails", async () => {
    const held: Socket[] = [];
    const down: Server = createServer((s) => void held.push(s));
    await new Promise<void>((ok) => down.listen(0, '127.0.0.1', ok));
    const port = (down.address() as { port: number }).port;
    try {
      // The down account comes first in the file, with more lists than the pull runs at once.
      const file = writeConfig('down.json', [
        {
          name: 'acme',
          platform: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: '${ACME_KEY}', timeoutMs: 6000, retries: 1 },
          lists: lists('down', 4),
        },
        { name: 'globex', platform: { baseUrl: globex.baseUrl, apiKey: '${GLOBEX_KEY}' }, lists: lists('up', 4, { pageSize: 1000 }) },
      ]);
      const r = await runCli(['--config', file, 'pull'], { env: KEYS, timeoutMs: 90_000 });
      expect(r.code).toBe(1);
      for (let i = 1; i <= 4; i++) expect(r.stdout).toContain(`up_${i}: succeeded`);
      const runs = (await t
        .db('listsync.sync_runs')
        .whereIn('list_name', ['down_1', 'down_2', 'down_3', 'down_4', 'up_1', 'up_2', 'up_3', 'up_4'])
        .select('list_name', 'status', 'finished_at')) as { list_name: string; status: string; finished_at: Date }[];
      const up = runs.filter((x) => x.list_name.startsWith('up_'));
      const failed = runs.filter((x) => x.list_name.startsWith('down_'));
      expect(up.map((x) => x.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.every((x) => x.status === 'failed')).toBe(true);
      const lastUp = Math.max(...up.map((x) => x.finished_at.getTime()));
      const firstDownFailed = Math.min(...failed.map((x) => x.finished_at.getTime()));
      expect(lastUp).toBeLessThan(firstDownFailed);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((ok) => down.close(ok));
    }
  }, 120_000);
});
