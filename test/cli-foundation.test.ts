import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator } from '../src/emulator/index.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { BIN, runCli, SOURCE_BIN } from './helpers/cli.js';

describe('listsync CLI: init, check, migrate', () => {
  let t: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    t = await createTestDatabase({ migrated: false });
    dir = mkdtempSync(join(tmpdir(), 'listsync-cli-'));
  });
  afterAll(async () => t?.drop());

  it('--help lists the commands and exits 0', async () => {
    const r = await runCli(['--help'], { cwd: dir });
    expect(r.code).toBe(0);
    for (const c of ['init', 'check', 'migrate', 'emulator']) expect(r.stdout).toContain(c);
  });

  it("a clone's bin runs the TypeScript sources (no build), as the compiled program the other tests run does", async () => {
    expect(SOURCE_BIN).not.toBe(BIN);
    const help = await runCli(['--help'], { cwd: dir, bin: SOURCE_BIN });
    expect(help.code).toBe(0);
    expect(help.stdout).toBe((await runCli(['--help'], { cwd: dir })).stdout);
    const check = await runCli(['check'], { cwd: dir, bin: SOURCE_BIN });
    expect(check.code).toBe(2);
    expect(check.stderr).toContain('listsync init');
  });

  it('an unknown command is a usage error: exit 2', async () => {
    const r = await runCli(['frobnicate'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command/);
  });

  it('check without a config exits 2 and says how to make one', async () => {
    const r = await runCli(['check'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('listsync init');
  });

  it('init writes a config and .env.example that check then reads', async () => {
    const r = await runCli(['init'], { cwd: dir });
    expect(r.code).toBe(0);
    const cfg = JSON.parse(readFileSync(join(dir, 'listsync.config.json'), 'utf8')) as { platform: { apiKey: string } };
    expect(cfg.platform.apiKey).toBe('${PLATFORM_API_KEY}');
    expect(readFileSync(join(dir, '.env.example'), 'utf8')).toContain('DATABASE_URL=');
    expect((await runCli(['init'], { cwd: dir })).code).toBe(2);
    // Without the secrets the config names the missing variable.
    const missing = await runCli(['check'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('PLATFORM_API_KEY');
  });

  it('check with a malformed config exits 2 and names the key', async () => {
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ platform: { baseUrl: 'not a url', apiKey: 'k-1234' }, database: { url: t.url } }),
    );
    const r = await runCli(['check', '--config', 'bad.json'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('platform.baseUrl');
    expect(r.stderr).toContain('"not a url"');
  });

  it('migrate applies once, is a no-op the second time; check then passes', async () => {
    const emu = await startEmulator({ port: 0, sample: true, items: 10, apiKeys: ['secret-key-123'] });
    onTestFinished(() => emu.close());
    const cfg = { platform: { baseUrl: emu.baseUrl }, database: { url: t.url }, lists: [] };
    writeFileSync(join(dir, 'ok.json'), JSON.stringify(cfg));
    const env = { PLATFORM_API_KEY: 'secret-key-123' };
    const before = await runCli(['check', '-c', 'ok.json'], { cwd: dir, env });
    expect(before.code, before.stdout + before.stderr).toBe(2);
    expect(before.stdout).toMatch(/migrations: .*listsync migrate/);

    const first = await runCli(['migrate', '-c', 'ok.json'], { cwd: dir, env });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied \d+ migration/);
    const second = await runCli(['migrate', '-c', 'ok.json'], { cwd: dir, env });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('already up to date');

    const after = await runCli(['check', '-c', 'ok.json'], { cwd: dir, env });
    expect(after.stdout).toContain('ok   database');
    expect(after.stdout).toContain('ok   platform: reachable, API key accepted');
    expect(after.code).toBe(0);
    expect(after.stdout + after.stderr).not.toContain('secret-key-123');
  });

  it('an unreachable database is reported without its password', async () => {
    writeFileSync(
      join(dir, 'down.json'),
      JSON.stringify({
        platform: { baseUrl: 'http://127.0.0.1:1/v1' },
        database: { url: 'postgres://u:hunter22@127.0.0.1:1/db' },
        lists: [],
      }),
    );
    const r = await runCli(['check', '-c', 'down.json'], { cwd: dir, env: { PLATFORM_API_KEY: 'k-1234' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('FAIL database');
    expect(r.stdout + r.stderr).not.toContain('hunter22');
  });
});
