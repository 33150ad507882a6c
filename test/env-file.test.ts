/** `.env` beside the config file is read as well as the one in the working directory; beside the config wins. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('.env beside the config file', () => {
  let w: World;
  let configDir: string;
  let elsewhere: string;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const base = mkdtempSync(join(tmpdir(), 'listsync-env-'));
    configDir = join(base, 'srv');
    elsewhere = join(base, 'home');
    mkdirSync(configDir);
    mkdirSync(elsewhere);
    writeFileSync(
      join(configDir, 'listsync.config.json'),
      JSON.stringify({ platform: { baseUrl: w.emu.baseUrl }, lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }] }),
    );
  });
  afterAll(async () => w?.close());

  it('cron-style: started elsewhere, check finds the key and database in the .env beside the config', async () => {
    writeFileSync(join(configDir, '.env'), `PLATFORM_API_KEY=${w.emu.apiKey}\nDATABASE_URL=${w.t.url}\n`);
    const r = await runCli(['--config', join(configDir, 'listsync.config.json'), 'check'], { cwd: elsewhere });
    expect(r.stdout).not.toMatch(/PLATFORM_API_KEY/);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('beside the config wins over the working directory, the real environment over both', () => {
    writeFileSync(join(configDir, '.env'), 'PLATFORM_API_KEY=from-config-dir\nDATABASE_URL=postgres://h/config-dir\n');
    writeFileSync(join(elsewhere, '.env'), 'PLATFORM_API_KEY=from-cwd\nLISTSYNC_LOG_LEVEL=debug\n');
    const path = join(configDir, 'listsync.config.json');
    const c = loadConfig({ path, cwd: elsewhere });
    expect(c.platform.apiKey).toBe('from-config-dir');
    expect(c.database.url).toBe('postgres://h/config-dir');
    expect(c.log.level).toBe('debug'); // only the working directory's .env sets it
    process.env.PLATFORM_API_KEY = 'from-process';
    try {
      expect(loadConfig({ path, cwd: elsewhere }).platform.apiKey).toBe('from-process');
    } finally {
      delete process.env.PLATFORM_API_KEY;
    }
  });

  it('names the variable when neither .env sets it', () => {
    rmSync(join(configDir, '.env'));
    rmSync(join(elsewhere, '.env'));
    const path = join(configDir, 'listsync.config.json');
    expect(() => loadConfig({ path, cwd: elsewhere })).toThrow(/PLATFORM_API_KEY/);
  });
});
