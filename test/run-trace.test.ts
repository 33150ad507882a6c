/**
 * `listsync runs`, `runs show ID` (a run's trace: src/store/run-events.ts), `state LIST` and
 * `reset LIST` over a real PostgreSQL and the emulator over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../src/emulator/index.js';
import { pruneRuns } from '../src/store/runs.js';
import { acquireLock, listLockName } from '../src/sync/lock.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('runs, runs show, state and reset', () => {
  let w: World;
  const cli = (args: string[], key = w.emu.apiKey) =>
    runCli(['--config', w.configFile, ...args], { env: { PLATFORM_API_KEY: key }, cwd: w.cwd });
  let pulled: number;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 250 }, list: { pageSize: 100 } });
    // The second request is refused with 429 once, as the rate limit would: the trace shows it and its retry.
    await w.emu.admin.setFaults({ rateLimitAtRequest: 2 });
    expect((await cli(['pull'])).code).toBe(0);
    pulled = Number((await w.t.db('listsync.sync_runs').max('id as id').first())!.id);
  });
  afterAll(async () => w?.close());

  it('runs show ID prints the plan, every request with its answer, the retry and the pages, in order', async () => {
    const r = await cli(['runs', 'show', String(pulled)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^run ${pulled}: orders pull succeeded`, 'm'));
    const trace = r.stdout.split('\ntrace:\n')[1]!.trimEnd().split('\n');
    const kinds = trace.map((l) => l.trim().split(/\s+/)[1]);
    expect(kinds[0]).toBe('start');
    expect(kinds.indexOf('plan')).toBeGreaterThan(0);
    expect(kinds.indexOf('plan')).toBeLessThan(kinds.indexOf('page'));
    expect(kinds.filter((k) => k === 'page')).toHaveLength(3);
    expect(kinds.at(-1)).toBe('end');
    const refused = trace.findIndex((l) => /HTTP 429.*rate_limited/.test(l));
    expect(refused, r.stdout).toBeGreaterThan(0);
    expect(trace.slice(refused + 1).some((l) => /request .*HTTP 200.*ok, retry 1/.test(l))).toBe(true);
    expect(trace.at(-1)).toMatch(/end\s+succeeded$/);
  });

  it('runs lists the history newest first; --failed keeps the failed runs, with their error', async () => {
    expect((await cli(['pull'], 'not-the-key-1234')).code).toBe(2);
    const all = await cli(['runs', '--list', 'orders']);
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout.trimEnd().split('\n').slice(2);
    expect(lines[0]).toMatch(/^\d+\s+orders\s+pull\s+failed\s/);
    expect(lines.some((l) => new RegExp(`^${pulled}\\s+orders\\s+pull\\s+succeeded\\s`).test(l))).toBe(true);
    const failed = await cli(['runs', '--failed', '--since', '1h']);
    expect(
      failed.stdout
        .trimEnd()
        .split('\n')
        .slice(2)
        .every((l) => /\sfailed\s/.test(l)),
    ).toBe(true);
    expect(failed.stdout).toMatch(/401|refused|key/i);
    expect(failed.stdout).not.toContain('not-the-key-1234');
    expect((await cli(['runs', '--since', 'yesterday'])).code).toBe(2);
    const none = await cli(['runs', 'show', '999999']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/No run with id 999999; "listsync runs" lists/);
  });

  it('state shows the watermark; reset needs --yes off a terminal, refuses while a run holds the lock, then the next pull is a full load', async () => {
    const state = await cli(['state', 'orders']);
    expect(state.code, state.stderr).toBe(0);
    expect(state.stdout).toMatch(/^pull\s+\d{4}-\d{2}-\d{2}\s/m);

    const unasked = await cli(['reset', 'orders']);
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toMatch(/pass --yes/);

    const lock = await acquireLock(w.t.db, listLockName('orders'));
    try {
      const refused = await cli(['reset', 'orders', '--yes']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/orders not reset: a run of it is in progress/);
      expect((await w.t.db('listsync.sync_state').where({ list_name: 'orders', job: 'pull' }).first()).watermark).not.toBeNull();
    } finally {
      await lock.release();
    }

    const reset = await cli(['reset', 'orders', '--yes']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/orders: watermark, high-water mark and checkpoint cleared \(pull\)/);
    expect(await w.t.db('listsync.sync_state').where({ list_name: 'orders' }).first('watermark', 'high_water', 'checkpoint')).toEqual({
      watermark: null,
      high_water: null,
      checkpoint: null,
    });
    expect((await cli(['state', 'orders'])).stdout).toMatch(/^pull\s+-\s+-\s+-\s/m);
    const again = await cli(['pull']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/orders: succeeded \(full load\) — 3 pages/);
  });

  it('a list name that is not configured gets the closest one', async () => {
    const r = await cli(['state', 'ordrs']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/No list named "ordrs" in the config \(did you mean "orders"\?\); configured: orders\./);
    const pull = await cli(['pull', '--list', 'ordrs']);
    expect(pull.code).toBe(2);
    expect(pull.stderr).toMatch(/did you mean "orders"\?/);
  });

  it('the run-history prune removes the traces of the runs it removes', async () => {
    // The full load after the reset (the first pull is kept: a schema change names it).
    const old = Number((await w.t.db('listsync.sync_runs').where({ status: 'succeeded' }).max('id as id').first())!.id);
    expect(Number((await w.t.db('listsync.sync_run_events').where({ run_id: old }).count('* as n').first())!.n)).toBeGreaterThan(0);
    // A newer pull that changed rows: the first one is no longer the newest the history must keep.
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id'))!.id);
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Newer Co' } });
    expect((await cli(['pull'])).stdout).toMatch(/updated 1/);
    await w.t
      .db('listsync.sync_runs')
      .where('id', '<=', old)
      .update({ finished_at: w.t.db.raw("now() - interval '40 days'") });
    const { deleted } = await pruneRuns(w.t.db, 30);
    expect(deleted).toBeGreaterThan(0);
    expect(await w.t.db('listsync.sync_runs').where({ id: old }).first()).toBeUndefined();
    expect(Number((await w.t.db('listsync.sync_run_events').where({ run_id: old }).count('* as n').first())!.n)).toBe(0);
  });
});
