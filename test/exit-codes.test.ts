/**
 * Exit codes mean one thing for every command: 0 success; 2 what the user gave is wrong
 * (usage, config, a refused API key); 1 something failed at run time (database or platform
 * unreachable, a run failed). Through the real CLI.
 */
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('exit codes', () => {
  let w: World;
  let files: { good: string; dbDown: string; platformDown: string };
  const GOOD = () => ({ PLATFORM_API_KEY: w.emu.apiKey });
  const REFUSED = { PLATFORM_API_KEY: 'REFUSED-KEY-1234' };
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 30 } });
    const dead = await closedPort();
    const list = [{ name: 'orders', appID: 'demo', listID: 'orders' }];
    const write = (name: string, platform: string, db: string) => {
      const file = join(w.cwd, name);
      writeFileSync(
        file,
        JSON.stringify({ platform: { baseUrl: platform, retries: 0, timeoutMs: 2000 }, database: { url: db }, lists: list }),
      );
      return file;
    };
    files = {
      good: write('good.json', w.emu.baseUrl, w.t.url),
      dbDown: write('db-down.json', w.emu.baseUrl, `postgres://postgres@127.0.0.1:${dead}/nope`),
      platformDown: write('platform-down.json', `http://127.0.0.1:${dead}/v1`, w.t.url),
    };
    // A mirror table for push/reconcile/status.
    expect((await runCli(['--config', files.good, 'pull'], { env: GOOD(), cwd: w.cwd })).code).toBe(0);
  });
  afterAll(async () => w?.close());

  const cases: [string, () => [string, string[], Record<string, string>], number][] = [
    ['unknown option', () => [files.good, ['pull', '--bogus'], GOOD()], 2],
    ['unknown list', () => [files.good, ['pull', '--list', 'nope'], GOOD()], 2],
    ['missing config file', () => [join(w.cwd, 'none.json'), ['status'], GOOD()], 2],
    ['check ok', () => [files.good, ['check'], GOOD()], 0],
    ['check, database down', () => [files.dbDown, ['check'], GOOD()], 1],
    ['check, platform down', () => [files.platformDown, ['check'], GOOD()], 1],
    ['check, refused key', () => [files.good, ['check'], REFUSED], 2],
    ['discover, platform down', () => [files.platformDown, ['discover'], GOOD()], 1],
    ['discover, refused key', () => [files.good, ['discover'], REFUSED], 2],
    ['pull, database down', () => [files.dbDown, ['pull'], GOOD()], 1],
    ['pull, platform down', () => [files.platformDown, ['pull'], GOOD()], 1],
    ['pull, refused key', () => [files.good, ['pull'], REFUSED], 2],
    ['backfill, bad date', () => [files.good, ['backfill', '--list', 'orders', '--from', 'yesterday'], GOOD()], 2],
    ['push, database down', () => [files.dbDown, ['push'], GOOD()], 1],
    ['push ok', () => [files.good, ['push'], GOOD()], 0],
    ['reconcile, platform down', () => [files.platformDown, ['reconcile'], GOOD()], 1],
    ['reconcile, refused key', () => [files.good, ['reconcile'], REFUSED], 2],
    ['users, platform down', () => [files.platformDown, ['users'], GOOD()], 1],
    ['users, refused key', () => [files.good, ['users'], REFUSED], 2],
    ['status ok', () => [files.good, ['status'], GOOD()], 0],
    ['status, database down', () => [files.dbDown, ['status'], GOOD()], 1],
    ['migrate, database down', () => [files.dbDown, ['migrate'], GOOD()], 1],
    ['conflicts, bad id', () => [files.good, ['conflicts', 'show', 'x'], GOOD()], 2],
  ];

  for (const [name, make, code] of cases) {
    it(`${name} exits ${code}`, async () => {
      const [file, args, env] = make();
      const r = await runCli(['--config', file, ...args], { env, cwd: w.cwd });
      expect(r.code, r.stdout + r.stderr).toBe(code);
      if (code !== 0) expect((r.stdout + r.stderr).trim().length).toBeGreaterThan(0);
    });
  }
});
