/**
 * Ctrl-C and SIGTERM: the command finishes the page in flight, records its run as interrupted,
 * says in one line how to carry on, and exits 130 (SIGINT) or 143 (SIGTERM); the next run resumes.
 * Through the real CLI against the emulator, whose latency keeps the run going long enough.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readState } from '../src/store/state.js';
import { runCli } from './helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from './helpers/world.js';

const FIRST_PAGE = /"msg":"page"/;

describe('SIGINT / SIGTERM', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });
  const world = () => startWorld({ emulator: { items: 3000, faults: { latencyMs: 60 } }, list: { pageSize: 100 } });
  const lastRun = async (job: string) =>
    (await w!.t.db('listsync.sync_runs').where({ list_name: 'orders', job }).orderBy('id', 'desc').first()) as {
      status: string;
      error: string | null;
      pages: number;
    };

  it('pull: Ctrl-C after a page exits 130, the run is interrupted with its checkpoint, and the next pull resumes', async () => {
    w = await world();
    const env = { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' };
    const r = await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd, stopOn: FIRST_PAGE, stopWith: 'SIGINT' });
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toContain(
      `interrupted by SIGINT; the work done is kept: run "listsync --config ${w.configFile} pull" again to carry on.`,
    );
    const run = await lastRun('pull');
    expect(run.status).toBe('interrupted');
    expect(run.pages).toBeGreaterThan(0);
    expect(run.pages).toBeLessThan(30);
    const state = await readState<{ nextPage: number }>(w.t.db, 'orders', 'pull');
    expect(state.watermark).toBeNull();
    expect(state.checkpoint!.nextPage).toBe(run.pages + 1);
    // Every page counted was committed: the rows are there.
    expect(Number((await w.t.db('mirror.orders').count({ n: '*' }))[0]!.n)).toBe(run.pages * 100);

    const status = await runCli(['--config', w.configFile, 'status'], { env, cwd: w.cwd });
    expect(status.stdout).toMatch(new RegExp(`interrupted \\(resumes at page ${run.pages + 1}\\)`));

    const again = await runCli(['--config', w.configFile, 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/orders: succeeded \(full load, resumed\)/);
    await expectMirrorEqualsPlatform(w);
  }, 120_000);

  it('backfill: SIGTERM exits 143 and records the run interrupted', async () => {
    w = await world();
    const env = { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' };
    const args = ['--config', w.configFile, 'backfill', '--list', 'orders', '--from', '2000-01-01'];
    const r = await runCli(args, { env, cwd: w.cwd, stopOn: FIRST_PAGE, stopWith: 'SIGTERM' });
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).toContain('interrupted by SIGTERM');
    expect(r.stderr).toContain(`run "listsync ${args.join(' ')}" again`);
    expect((await lastRun('backfill')).status).toBe('interrupted');
  }, 120_000);

  it('reconcile: Ctrl-C during the sweep marks nothing and exits 130', async () => {
    w = await world();
    const env = { PLATFORM_API_KEY: w.emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' };
    expect((await runCli(['--config', w.configFile, 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd })).code).toBe(0);
    // Items deleted on the platform: a finished reconcile would mark them.
    const ids = (await w.t.db('mirror.orders').orderBy('id').limit(5).pluck('id')) as string[];
    for (const id of ids) await w.emu.admin.deleteItem('demo', 'orders', id);
    // Reconcile reads 1000 IDs a page: a slower platform keeps the sweep going past the first page.
    await w.emu.admin.setFaults({ latencyMs: 1500 });
    const r = await runCli(['--config', w.configFile, 'reconcile'], { env, cwd: w.cwd, stopOn: FIRST_PAGE, stopWith: 'SIGINT' });
    expect(r.code, r.stderr).toBe(130);
    expect((await lastRun('reconcile')).status).toBe('interrupted');
    expect(await w.t.db('mirror.orders').whereNotNull('_deleted_at').count({ n: '*' })).toEqual([{ n: 0 }]);
  }, 120_000);
});
