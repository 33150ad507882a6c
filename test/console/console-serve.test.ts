/**
 * The real `listsync serve`: the console on its own listener beside the
 * webhook one, with LISTSYNC_CONSOLE_TOKEN or a token generated and printed
 * once; the webhook port answers 404 for the console's pages.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, childEnv } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null) {
    const closed = new Promise((r) => child!.once('close', r));
    child.kill('SIGTERM');
    await closed;
  }
  child = undefined;
  await w?.close();
  w = undefined;
});

/** Starts serve; resolves with its output once both listeners are announced. */
async function serve(
  world: World,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ out: () => string; hooks: string; console: string }> {
  child = spawn(process.execPath, [BIN, '--config', world.configFile, 'serve', '--port', '0', ...args], {
    cwd: world.cwd,
    env: childEnv({ PLATFORM_API_KEY: world.emu.apiKey, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child!.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const hooks = /listsync serve on (http:\/\/\S+?) /.exec(out)?.[1];
      const console = /console on (http:\/\/[^\s/]+)/.exec(out)?.[1];
      if (hooks && console) resolve({ out: () => out, hooks, console });
    });
    child!.on('close', (code) => reject(new Error(`serve ended (${code}):\n${out}`)));
  });
}

describe('serve with its console', () => {
  it('LISTSYNC_CONSOLE_TOKEN: the console asks for it; the webhook port has no console', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const token = 'serve-console-token-0123456789';
    const s = await serve(w, ['--console', '127.0.0.1:0'], { LISTSYNC_CONSOLE_TOKEN: token });
    expect(s.console).not.toBe(s.hooks);
    expect((await fetch(`${s.console}/`)).status).toBe(401);
    const page = await fetch(`${s.console}/`, { headers: { authorization: `Bearer ${token}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<a href="/lists/orders">orders</a>');
    for (const path of ['/', '/budget', '/conflicts', '/lists/orders', '/assets/console.css'])
      expect((await fetch(`${s.hooks}${path}`, { headers: { authorization: `Bearer ${token}` } })).status, path).toBe(404);
    expect(s.out()).not.toContain(token);
  });

  it('no token on a non-loopback address: one is generated and printed once, and it opens the console', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const s = await serve(w, ['--console', '0.0.0.0:0']);
    const token = /\?token=([A-Za-z0-9_-]{20,})/.exec(s.out())?.[1];
    expect(token, s.out()).toBeDefined();
    expect(s.out().split(token!).length - 1).toBe(1);
    expect((await fetch(`${s.console}/`)).status).toBe(401);
    expect((await fetch(`${s.console}/`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });
});
