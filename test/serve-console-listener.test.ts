/**
 * The console never stops `serve`: with no `serve.console` set, a second serve on the same host
 * (whose console's default address, 127.0.0.1:8081, is taken) warns and runs without a console; an
 * address the operator chose (serve.console, --console) that cannot be had is an error, exit 2,
 * naming the address and where it was set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONSOLE_ADDRESS } from '../src/config.js';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

let w: World;
let defaultConfig: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  w = await startWorld({ emulator: { items: 10 } });
  // The world's config pins the console to a free port; this one leaves serve.console unset.
  const raw = JSON.parse(readFileSync(w.configFile, 'utf8')) as Record<string, unknown>;
  delete raw.serve;
  defaultConfig = join(w.cwd, 'default-console.json');
  writeFileSync(defaultConfig, JSON.stringify(raw));
}, 60_000);
afterAll(async () => {
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null) {
      const closed = new Promise((r) => c.once('close', r));
      c.kill('SIGTERM');
      await closed;
    }
  await w?.close();
});

/** Starts serve; resolves with its output and webhook URL once it announced itself (and a console, or a warning). */
async function serve(config: string): Promise<{ out: () => string; url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, '--config', config, 'serve', '--port', '0'], {
    cwd: w.cwd,
    env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const seen = (d: Buffer) => {
      out += d.toString();
      const url = /listsync serve on (http:\/\/[^\s,()]+)/.exec(out)?.[1];
      if (url && /console on http|the console cannot listen/.test(out)) resolve({ out: () => out, url, child });
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.on('close', (code) => reject(new Error(`serve ended (${code}):\n${out}`)));
  });
}

/** A port held by a plain listener of this test. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, server };
}

describe('the console never stops serve', () => {
  it('two serve on one host, neither configured with a console address: both run', async () => {
    const first = await serve(defaultConfig);
    const second = await serve(defaultConfig);
    // At most one can have the default address; each one without it says so and runs without a console.
    // (Another process of the suite may hold the address meanwhile: then neither has it, or the second does.)
    const withConsole = [first, second].filter((s) => s.out().includes(`console on http://${DEFAULT_CONSOLE_ADDRESS}`));
    expect(withConsole.length).toBeLessThanOrEqual(1);
    for (const s of [first, second].filter((s) => !withConsole.includes(s))) {
      expect(s.out()).toContain(`the console cannot listen on ${DEFAULT_CONSOLE_ADDRESS}: the port is in use by another process`);
      expect(s.out()).toContain('serve runs without the console');
    }
    for (const s of [first, second]) {
      const res = await fetch(`${s.url}/healthz`);
      expect([200, 503]).toContain(res.status);
      expect(((await res.json()) as { database: string }).database).toBe('ok');
      expect(s.child.exitCode).toBeNull();
    }
  });

  it('an address set with --console or serve.console that is taken: exit 2, naming it', async () => {
    const held = await holdPort();
    try {
      const address = `127.0.0.1:${held.port}`;
      const flag = await runCli(['--config', defaultConfig, 'serve', '--port', '0', '--console', address], {
        cwd: w.cwd,
        env: { PLATFORM_API_KEY: w.emu.apiKey },
      });
      expect(flag.code).toBe(2);
      expect(flag.stderr).toContain(`the console cannot listen on ${address}: the port is in use by another process (--console)`);

      const raw = JSON.parse(readFileSync(defaultConfig, 'utf8')) as Record<string, unknown>;
      const pinned = join(w.cwd, 'pinned-console.json');
      writeFileSync(pinned, JSON.stringify({ ...raw, serve: { console: address } }));
      const key = await runCli(['--config', pinned, 'serve', '--port', '0'], { cwd: w.cwd, env: { PLATFORM_API_KEY: w.emu.apiKey } });
      expect(key.code).toBe(2);
      expect(key.stderr).toContain(`the console cannot listen on ${address}: the port is in use by another process (serve.console)`);
    } finally {
      held.server.close();
    }
  });
});
