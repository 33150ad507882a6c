/** serve ends at once when it cannot do its job: a taken port, a database it cannot reach. */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

async function listenAnywhere(): Promise<Server> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return s;
}
const portOf = (s: Server): number => (s.address() as { port: number }).port;

describe('serve fails fast', () => {
  let w: World;
  let occupied: Server;
  let scheduled: string;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 20 } });
    occupied = await listenAnywhere();
    scheduled = join(w.cwd, 'scheduled.json');
    writeFileSync(
      scheduled,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl },
        database: { url: w.t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', schedule: '* * * * * *' }],
        serve: { host: '127.0.0.1', console: '127.0.0.1:0' },
      }),
    );
  });
  afterAll(async () => {
    await new Promise<void>((r) => occupied?.close(() => r()));
    await w?.close();
  });

  it('exits 1 within seconds, naming the port, when the port is taken and a schedule is configured', async () => {
    const started = Date.now();
    const r = await runCli(['--config', scheduled, 'serve', '--port', String(portOf(occupied))], {
      env: { PLATFORM_API_KEY: w.emu.apiKey },
      cwd: w.cwd,
      timeoutMs: 30_000,
    });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.stderr).toContain(`127.0.0.1:${portOf(occupied)}`);
    expect(r.stderr).toContain('EADDRINUSE');
    expect(r.stderr + r.stdout).not.toContain('NODE-CRON');
  });

  it('exits 1 within seconds when its database is unreachable at start', async () => {
    const free = await listenAnywhere();
    const deadPort = portOf(free);
    await new Promise<void>((r) => free.close(() => r()));
    const started = Date.now();
    const file = join(w.cwd, 'deaddb.json');
    writeFileSync(
      file,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl },
        database: { url: `postgres://postgres@127.0.0.1:${deadPort}/nope` },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', schedule: '* * * * *' }],
        serve: { console: '127.0.0.1:0' },
      }),
    );
    const dead = await runCli(['--config', file, 'serve', '--port', '0'], {
      env: { PLATFORM_API_KEY: w.emu.apiKey },
      cwd: w.cwd,
      timeoutMs: 30_000,
    });
    expect(dead.signal).toBeNull();
    expect(dead.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(dead.stderr).toContain(`127.0.0.1:${deadPort}`);
    expect(dead.stderr).toMatch(/database/i);
  });

  it('warns when no job is scheduled', async () => {
    const file = join(w.cwd, 'unscheduled.json');
    writeFileSync(
      file,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl },
        database: { url: w.t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
        users: { enabled: false },
        serve: { console: '127.0.0.1:0' },
      }),
    );
    const child = spawn(process.execPath, [BIN, '--config', file, '--log-level', 'info', 'serve', '--port', '0'], {
      cwd: w.cwd,
      env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const sawListening = new Promise<void>((resolve) => {
      const onData = (d: Buffer) => {
        output += d.toString();
        if (output.includes('listsync serve on')) resolve();
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
    });
    const exited = new Promise<string>((r) => child.on('close', (code, signal) => r(`${code}/${signal}`)));
    await sawListening;
    child.kill('SIGTERM');
    expect(await exited, output).toBe('0/null');
    expect(output).toContain('no jobs scheduled; add lists[].schedule');
  });
});
