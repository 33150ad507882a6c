/**
 * A list's health is the worst current state of its jobs (src/store/list-health.ts): a failed pull
 * keeps the list degraded, with that pull's error, in `listsync status`, `/healthz`, `/metrics` and
 * the console until a pull succeeds; a push with nothing to send changes nobody's health.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

let w: World;
const cli = (args: readonly string[]) =>
  runCli(['--config', w.configFile, ...args], { cwd: w.cwd, env: { PLATFORM_API_KEY: w.emu.apiKey } });

interface Served {
  child: ChildProcess;
  url: string;
  consoleUrl: string;
  stop(): Promise<number | null>;
}

/** `listsync serve` on any free port, no schedule fired by the test: what it answers comes from the run history. */
async function serve(): Promise<Served> {
  const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'serve', '--port', '0'], {
    cwd: w.cwd,
    env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 30_000;
  while (!/listsync serve on /.test(out) || !/console on /.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`serve did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const url = /(http:\/\/[^\s,()]+)\/healthz/.exec(out)![1]!;
  const consoleUrl = /console on (http:\/\/\S+)/.exec(out)![1]!;
  return {
    child,
    url,
    consoleUrl,
    stop: () =>
      new Promise((resolve) => {
        child.once('close', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

interface HealthBody {
  status: string;
  lists: { list: string; lastError: string | null }[];
}

beforeAll(async () => {
  w = await startWorld({ emulator: { items: 20 }, platform: { retries: 0 } });
}, 60_000);
afterAll(async () => w?.close());

describe('health is the worst current state of a list’s jobs', () => {
  it('a failed pull followed by an empty push leaves the list degraded with the pull’s error everywhere, until a pull succeeds', async () => {
    expect((await cli(['pull'])).code).toBe(0);
    await w.emu.admin.setFaults({ errorRate: 1 });
    expect((await cli(['pull'])).code).toBe(1);
    // Nothing to send: the push succeeds without a request.
    expect((await cli(['push'])).code).toBe(0);
    const runs = (await w.t.db('listsync.sync_runs').orderBy('id').select('job', 'status', 'requests', 'error')) as {
      job: string;
      status: string;
      requests: number;
      error: string | null;
    }[];
    expect(runs.map((r) => [r.job, r.status])).toEqual([
      ['pull', 'succeeded'],
      ['pull', 'failed'],
      ['push', 'succeeded'],
    ]);
    expect(runs[2]!.requests).toBe(0);
    const pullError = runs[1]!.error!;
    expect(pullError).toMatch(/\S/);

    const status = await cli(['status', '--json']);
    const statusList = (JSON.parse(status.stdout) as { lists: { list: string; lastError: string | null }[] }).lists[0]!;
    expect(statusList).toMatchObject({ list: 'orders', lastError: pullError });
    expect((await cli(['status'])).stdout).toContain(pullError.slice(0, 40));

    const s = await serve();
    try {
      const health = await fetch(`${s.url}/healthz`);
      expect(health.status).toBe(503);
      const body = (await health.json()) as HealthBody;
      expect(body.status).toBe('degraded');
      expect(body.lists).toEqual([expect.objectContaining({ list: 'orders', lastError: pullError })]);

      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/^listsync_last_run_failed\{list="orders"\} 1$/m);

      // The console (loopback, no token): degraded, naming the failed pull, its error shown, not "push succeeded".
      const page = await (await fetch(`${s.consoleUrl}/`)).text();
      const row = /<tr>(?:(?!<\/tr>)[\s\S])*?>orders<\/a>[\s\S]*?<\/tr>/.exec(page)![0];
      expect(row).toContain('badge degraded');
      expect(row).toContain('last pull failed');
      expect(row).not.toContain('badge healthy');
      expect(row).toMatch(/pull <strong>failed<\/strong>/);
    } finally {
      expect(await s.stop()).toBe(0);
    }

    // A pull that succeeds clears it.
    await w.emu.admin.setFaults({ errorRate: null });
    expect((await cli(['pull'])).code).toBe(0);
    const after = JSON.parse((await cli(['status', '--json'])).stdout) as { lists: { lastError: string | null }[] };
    expect(after.lists[0]!.lastError).toBeNull();
    const s2 = await serve();
    try {
      const health = await fetch(`${s2.url}/healthz`);
      expect(((await health.json()) as HealthBody).lists[0]!.lastError).toBeNull();
      expect(health.status).toBe(200);
      expect(await (await fetch(`${s2.url}/metrics`)).text()).toMatch(/^listsync_last_run_failed\{list="orders"\} 0$/m);
    } finally {
      expect(await s2.stop()).toBe(0);
    }
  }, 180_000);
});
