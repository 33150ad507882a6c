/** The smaller operator annoyances: plurals, conflict outcomes, status lag and times, help, metrics names, temp dirs. */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('smaller operator fixes', () => {
  let w: World;
  let env: Record<string, string>;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 40 }, list: { pageSize: 100 } });
    env = { PLATFORM_API_KEY: w.emu.apiKey };
  });
  afterAll(async () => w?.close());
  const cli = (...args: string[]) => runCli(['--config', w.configFile, ...args], { env, cwd: w.cwd });

  it('a one-page pull says "1 page"', async () => {
    const r = await cli('pull');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/— 1 page, \d+ requests?, 0 retries;/);
    expect(r.stdout).not.toContain('1 pages');
  });

  it('a push settled remote-wins says what happened and where the local edit is kept', async () => {
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    await w.t.db('mirror.orders').where({ id }).update({ customer: 'Local Co' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { Text2: 'Remote Ltd' } });
    const r = await cli('push');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('1 conflict(s)');
    expect(r.stdout).toContain("the platform's version is kept in the mirror (conflictPolicy remote-wins)");
    expect(r.stdout).toContain('listsync conflicts --all --list orders');
  });

  it('status shows the lag to the second, one timestamp format, and the users error', async () => {
    await pullList(w.deps(), w.config.lists[0]!);
    await w.t
      .db('listsync.sync_runs')
      .where({ list_name: 'orders', job: 'pull', status: 'succeeded' })
      .update({ started_at: w.t.db.raw("now() - interval '90 seconds'") });
    const users = await runCli(['--config', w.configFile, 'users'], { env: { PLATFORM_API_KEY: 'REFUSED-KEY-5678' }, cwd: w.cwd });
    expect(users.code).toBe(2);
    const r = await cli('status');
    expect(r.code, r.stderr).toBe(0);
    // 90 s and the time the commands took: whole minutes would print 2m00s.
    expect(r.stdout).toMatch(/\b1m[3-5]\ds\b/);
    expect(r.stdout).toMatch(/users: last run failed at \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ — .*HTTP 401/);
    expect(r.stdout).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
  });

  it('hooks subscribe --help says where the type codes come from', async () => {
    const r = await cli('hooks', 'subscribe', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout.replace(/\s+/g, ' ')).toContain('an integer the platform defines for the event kind');
  });

  it('/metrics has no gauge named *_total (promtool lint)', async () => {
    const metrics = createMetrics({ db: w.t.db, config: w.config, logger: silentLogger() });
    const text = await metrics.registry.metrics();
    const gauges = [...text.matchAll(/^# TYPE (\S+) gauge$/gm)].map((m) => m[1]!);
    expect(gauges.length).toBeGreaterThan(0);
    expect(gauges.filter((g) => g.endsWith('_total'))).toEqual([]);
  });

  it('a test world leaves no temporary directory behind', async () => {
    const other = await startWorld({ emulator: { items: 5 }, db: w.t });
    expect(existsSync(other.cwd)).toBe(true);
    await other.close();
    expect(existsSync(other.cwd)).toBe(false);
  });

  it('the docs say how to install the command; the demo advises no npx', () => {
    const operations = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    expect(operations).toContain('npm pack');
    expect(operations).toContain('npm link');
    const commands = readFileSync(new URL('../docs/commands.md', import.meta.url), 'utf8');
    expect(commands).toContain('npm run listsync -- <command>');
    const demo = readFileSync(new URL('../src/commands/demo.ts', import.meta.url), 'utf8');
    expect(demo).not.toContain('npx listsync');
  });
});
