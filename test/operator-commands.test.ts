/** Small things an operator relies on: --version, status --list / --json, export --out into a new directory, reconcile's log level. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('operator commands', () => {
  let w: World;
  let env: Record<string, string>;
  const cli = (args: string[], extra: Record<string, string> = {}) =>
    runCli(['--config', w.configFile, ...args], { env: { ...env, ...extra }, cwd: w.cwd });
  beforeAll(async () => {
    w = await startWorld({
      emulator: { items: 120 },
      lists: [
        { name: 'orders', appID: 'demo', listID: 'orders' },
        { name: 'orders_copy', appID: 'demo', listID: 'orders', table: 'orders_copy' },
      ],
    });
    env = { PLATFORM_API_KEY: w.emu.apiKey };
    expect((await cli(['pull'])).code).toBe(0);
  });
  afterAll(async () => w?.close());

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('status --list shows that list only; an unknown one is exit 2', async () => {
    const r = await cli(['status', '--list', 'orders_copy']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^orders_copy\s/m);
    expect(r.stdout).not.toMatch(/^orders\s/m);
    const bad = await cli(['status', '--list', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/No list named "nope"/);
  });

  it('status --json is one JSON object with the same figures', async () => {
    const r = await cli(['status', '--json', '--list', 'orders']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { lists: { list: string; rows: number; lastRunStatus: string }[]; webhooks: object };
    expect(report.lists).toHaveLength(1);
    expect(report.lists[0]).toMatchObject({ list: 'orders', rows: 120, lastRunStatus: 'succeeded' });
    expect(report.webhooks).toMatchObject({ subscriptions: 0 });
  });

  it('export dbt-sources --out creates the directories it needs', async () => {
    const out = join(w.cwd, 'models', 'staging', 'sources.yml');
    const r = await cli(['export', 'dbt-sources', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(out)).toBe(true);
    expect(readFileSync(out, 'utf8')).toMatch(/name: orders_copy/);
  });

  it('reconcile marking deletes logs info, not a warning', async () => {
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(7).pluck('id')) as string[];
    for (const id of ids) await w.emu.admin.deleteItem('demo', 'orders', id);
    const r = await cli(['reconcile', '--list', 'orders'], { LISTSYNC_LOG_LEVEL: 'info' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/marked deleted 7/);
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(lines).toContainEqual(expect.objectContaining({ level: 'info', msg: 'reconcile finished' }));
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });
});
