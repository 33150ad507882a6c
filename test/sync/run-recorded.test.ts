/**
 * Every run that starts is recorded, whatever step it fails at: a pull that fails at its
 * first request (revoked key, wrong list, platform down) leaves a failed sync_runs row,
 * and status, /healthz and /metrics show it at once.
 */
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';
import { jobs } from '../../jobs/index.js';
import { startServe } from '../../src/serve/start-serve.js';
import { pullUsers } from '../../src/sync/users.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

interface Run {
  job: string;
  status: string;
  error: string | null;
  requests: number;
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('a run that fails at its first request is recorded', () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 50 } });
  });
  afterAll(async () => w?.close());

  const runs = async (): Promise<Run[]> =>
    (await w.t.db('listsync.sync_runs').orderBy('id').select('job', 'status', 'error', 'requests')) as Run[];
  const lastRun = async (): Promise<Run> => (await runs()).at(-1)!;
  const configWith = (name: string, patch: (raw: Record<string, Record<string, unknown>>) => void): string => {
    const raw = JSON.parse(
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl, requestsPerSecond: 100, timeoutMs: 2000, retries: 0 },
        database: { url: w.t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      }),
    ) as Record<string, Record<string, unknown>>;
    patch(raw);
    const file = join(w.cwd, name);
    writeFileSync(file, JSON.stringify(raw));
    return file;
  };

  it('a revoked key: pull exits 2 (the key is wrong), the run is failed with the reason, status says so', async () => {
    const r = await runCli(['--config', configWith('revoked.json', () => undefined), 'pull'], {
      env: { PLATFORM_API_KEY: 'REVOKED-KEY-0000' },
      cwd: w.cwd,
    });
    expect(r.code).toBe(2);
    const run = await lastRun();
    expect(run).toMatchObject({ job: 'pull', status: 'failed' });
    expect(run.error).toMatch(/fields failed: HTTP 401/);
    expect(run.requests).toBeGreaterThanOrEqual(1);
    expect(run.error).not.toContain('REVOKED-KEY-0000');
    const status = await runCli(['--config', configWith('ok.json', () => undefined), 'status'], {
      env: { PLATFORM_API_KEY: w.emu.apiKey },
      cwd: w.cwd,
    });
    expect(status.stdout).toMatch(/failed/);
    expect(status.stdout).toContain('HTTP 401');
  });

  it('a wrong list ID and a platform that is down are recorded the same way', async () => {
    const wrongList = configWith('wrong-list.json', (raw) => {
      (raw.lists as unknown as Record<string, unknown>[])[0]!.listID = 'no-such-list';
    });
    // (exit 2: the platform, asked about the list, says the config names a list it does not have)
    expect((await runCli(['--config', wrongList, 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd })).code).toBe(2);
    expect(await lastRun()).toMatchObject({ job: 'pull', status: 'failed', error: expect.stringMatching(/40400.*not found/) as string });

    const port = await closedPort();
    const down = configWith('down.json', (raw) => {
      raw.platform!.baseUrl = `http://127.0.0.1:${port}/v1`;
    });
    expect(
      (
        await runCli(['--config', down, 'backfill', '--list', 'orders', '--from', '2024-01-01'], {
          env: { PLATFORM_API_KEY: w.emu.apiKey },
          cwd: w.cwd,
        })
      ).code,
    ).toBe(1);
    expect(await lastRun()).toMatchObject({ job: 'backfill', status: 'failed', error: expect.stringMatching(/ECONNREFUSED/) as string });
    // A platform that is down is not reported as the database.
    expect((await lastRun()).error).not.toMatch(/database/i);
  });

  it('reconcile and users failing at their first request are recorded too', async () => {
    const revoked = configWith('revoked2.json', () => undefined);
    // reconcile needs a mirror table: one good pull first.
    expect((await runCli(['--config', revoked, 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd })).code).toBe(0);
    expect((await runCli(['--config', revoked, 'reconcile'], { env: { PLATFORM_API_KEY: 'REVOKED-KEY-0000' }, cwd: w.cwd })).code).toBe(2);
    expect(await lastRun()).toMatchObject({ job: 'reconcile', status: 'failed', error: expect.stringMatching(/HTTP 401/) as string });
    expect((await runCli(['--config', revoked, 'users'], { env: { PLATFORM_API_KEY: 'REVOKED-KEY-0000' }, cwd: w.cwd })).code).toBe(2);
    expect(await lastRun()).toMatchObject({ job: 'users', status: 'failed', error: expect.stringMatching(/HTTP 401/) as string });
  });

  it('/healthz says degraded and listsync_last_run_failed is 1 right after such a pull', async () => {
    const bad = { ...w.config, platform: { ...w.config.platform, baseUrl: `http://127.0.0.1:${await closedPort()}/v1`, retries: 0 } };
    const metrics = createMetrics({ db: w.t.db, config: w.config, logger: w.logger, defaultMetrics: false });
    const serve = await startServe({
      jobs,
      config: w.config,
      db: w.t.db,
      client: w.client,
      logger: w.logger,
      schedule: false,
      port: 0,
      host: '127.0.0.1',
      routes: { '/metrics': metrics.handler },
    });
    try {
      expect((await runCli(['--config', w.configFile, 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd })).code).toBe(0);
      // The reconcile that failed above keeps the list degraded until a reconcile succeeds (a list is as healthy as its worst job).
      expect((await runCli(['--config', w.configFile, 'reconcile'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd })).code).toBe(0);
      expect(((await (await fetch(`${serve.url}/healthz`)).json()) as { status: string }).status).toBe('ok');
      writeFileSync(
        join(w.cwd, 'bad.json'),
        JSON.stringify({
          platform: { baseUrl: bad.platform.baseUrl, retries: 0 },
          database: { url: w.t.url },
          lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
        }),
      );
      expect(
        (await runCli(['--config', join(w.cwd, 'bad.json'), 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd })).code,
      ).toBe(1);
      const health = (await (await fetch(`${serve.url}/healthz`)).json()) as { status: string; lists: { lastError: string | null }[] };
      expect(health.status).toBe('degraded');
      expect(health.lists[0]!.lastError).toMatch(/ECONNREFUSED/);
      const text = await (await fetch(`${serve.url}/metrics`)).text();
      expect(text).toMatch(/^listsync_last_run_failed\{list="orders"\} 1$/m);
    } finally {
      await serve.close();
    }
  });

  it('a users run through the library records the failure before rethrowing', async () => {
    const port = await closedPort();
    const { createClient } = await import('../../src/context.js');
    const config = { ...w.config, platform: { ...w.config.platform, baseUrl: `http://127.0.0.1:${port}/v1`, retries: 0 } };
    const client = createClient(config, w.logger);
    try {
      await expect(pullUsers({ db: w.t.db, client, config, logger: w.logger })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await client.close();
    }
    expect(await lastRun()).toMatchObject({ job: 'users', status: 'failed' });
  });
});
