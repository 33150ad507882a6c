/**
 * Eight incremental pulls killed with SIGKILL at pages chosen at random,
 * while the list keeps changing, then one pull: no row is left behind. Each
 * killed run resumes the one before from its checkpoint; the run that
 * finishes reads, newest first down to the first attempt's start, what moved
 * onto pages the killed attempts had already read (issue 26: a resumed run's
 * high-water mark covers what it actually read).
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { pullList } from '../../src/sync/pull.js';
import { readState } from '../../src/store/state.js';
import { BIN, childEnv } from '../helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.emu.admin.setActivity(null);
  await w?.close();
  w = undefined;
});

interface Checkpoint {
  nextPage: number;
  mode: string;
  plan: { order: string };
}

/** Starts `listsync pull` in a child and kills it without warning once its checkpoint reaches `page`; false when it finished first. */
async function pullKilledAt(world: World, page: number): Promise<boolean> {
  const child = spawn(process.execPath, [BIN, '--config', world.configFile, 'pull'], {
    env: childEnv({ PLATFORM_API_KEY: world.emu.apiKey }),
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.once('exit', r));
  let finished = false;
  void exited.then(() => (finished = true));
  for (;;) {
    const s = await readState<Checkpoint>(world.t.db, 'orders', 'pull');
    if ((s.checkpoint?.nextPage ?? 0) >= page || finished) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const killed = !finished && child.kill('SIGKILL');
  await exited;
  return killed;
}

describe('killed incremental pulls', () => {
  it('eight kills at random pages while 20 edits/s run, then one pull: no row left behind', async () => {
    w = await startWorld({
      emulator: { items: 3000, faults: { latencyMs: 40 } },
      list: { pageSize: 100, overlapMinutes: 0 },
      platform: { maxInFlight: 2 },
    });
    const list = w.config.lists[0]!;
    expect((await pullList(w.deps(), list)).status).toBe('succeeded');
    // Touch most of the list, so an incremental read spans about 25 pages.
    await w.emu.admin.setActivity({ appID: 'demo', listID: 'orders', editsPerSecond: 5000, seed: 3 });
    while ((await w.emu.admin.activity()).totals.edits < 2500) await new Promise((r) => setTimeout(r, 20));
    await w.emu.admin.setActivity({ appID: 'demo', listID: 'orders', editsPerSecond: 20, seed: 5 });

    let seed = 17;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let kills = 0;
    let at = 1;
    for (let attempt = 0; attempt < 8; attempt++) {
      at += 1 + Math.floor(random() * 3);
      if (await pullKilledAt(w, at)) kills++;
      const s = await readState<Checkpoint>(w.t.db, 'orders', 'pull');
      if (!s.checkpoint)
        at = 1; // that one finished: the next starts afresh
      else expect(s.checkpoint.plan.order).toBe('newest-first');
    }
    expect(kills).toBe(8);
    const runs = (await w.t.db('listsync.sync_runs').where({ job: 'pull' }).orderBy('id')) as { status: string; resumed: boolean }[];
    expect(runs.slice(1).every((r) => r.status === 'running' || r.status === 'failed')).toBe(true);

    // Items edited while the attempts ran (the totals count since the 20 edits/s started).
    expect((await w.emu.admin.setActivity(null)).totals.edits).toBeGreaterThan(100);
    const r = await pullList(w.deps(), list);
    expect(r.status).toBe('succeeded');
    expect(r.resumed).toBe(true);
    expect(r.watermarkHeld).toBe(false);
    await expectMirrorEqualsPlatform(w);
    // About 25 s on an idle machine: eight child processes start; the limit leaves room for a busy one.
  }, 180_000);
});
