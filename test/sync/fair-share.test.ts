/**
 * Fair sharing of the account's budget between processes: a backfill in a
 * child process (`listsync backfill`) keeps the account at its limit while
 * this process pushes changes of another list on the same account. Both take
 * their slots from the log shared in PostgreSQL, so the push gets slots
 * within a window or two instead of waiting for the backfill to end, and the
 * two together never put more than the limit into a second.
 * (`npm run bench fair-share` does the same with 200,000 items and 100 changes.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { BIN, childEnv } from '../helpers/cli.js';
import { type World, startWorld } from '../helpers/world.js';

let w: World;
let backfill: ChildProcess | undefined;

beforeAll(async () => {
  w = await startWorld({
    // The account's real limit, and answers slow enough that the backfill is still paging when the push starts.
    emulator: { items: 60_000, rateLimit: { burst: 10, perSecond: 10 }, faults: { latencyMs: 100 } },
    platform: { requestsPerSecond: 10 },
    // The pushed list is a second mirror of the same platform list: a list's jobs share its lock by design.
    lists: [
      { name: 'orders', appID: 'demo', listID: 'orders' },
      { name: 'orders_b', appID: 'demo', listID: 'orders', table: 'orders_b' },
    ],
  });
}, 60_000);

afterAll(async () => {
  if (backfill && backfill.exitCode === null) {
    const exited = new Promise((r) => backfill!.once('exit', r));
    backfill.kill('SIGKILL');
    await exited;
  }
  await w?.close();
});

describe('a backfill and a push on one account, in two processes', () => {
  it('the push gets its first slot within 2 s of starting, and the two never exceed the limit together', async () => {
    const pushed = w.config.lists[1]!;
    // The pushed list's mirror: one day of items, then 20 of them edited with SQL.
    const day = String((await w.emu.admin.exportList('demo', 'orders')).items.at(-1)!.Modified).slice(0, 10);
    await pullList(w.deps(), pushed, { kind: 'backfill', from: day, to: day });
    await w.t.db.raw(`update mirror.orders_b set notes = 'fair ' || id where id in (select id from mirror.orders_b order by id limit 20)`);

    backfill = spawn(process.execPath, [BIN, '--config', w.configFile, 'backfill', '--list', 'orders', '--from', '2000-01-01'], {
      env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey }),
      stdio: 'ignore',
    });
    // Wait until the backfill is in full flow: pages are being committed.
    for (let i = 0; ; i++) {
      const row = (await w.t.db('listsync.sync_runs').where({ job: 'backfill', list_name: 'orders' }).first('pages')) as
        { pages: number } | undefined;
      if ((row?.pages ?? 0) >= 3) break;
      if (i > 300) throw new Error('the backfill did not commit 3 pages in 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    await w.emu.admin.clearRequests();
    const started = Date.now();
    const r = await pushList(w.deps(), pushed);
    const log = await w.emu.admin.requests();
    const stats = await w.emu.admin.stats();

    expect(r.applied).toBe(20);
    const patches = log.filter((e) => e.method === 'PATCH').sort((x, y) => x.startedAt - y.startedAt);
    expect(patches).toHaveLength(20);
    expect((patches[0]!.startedAt - started) / 1000).toBeLessThanOrEqual(2);
    // The backfill was still paging while the push ran: the budget was really shared.
    const pages = log.filter((e) => e.path.endsWith('/items/query') && e.startedAt <= patches.at(-1)!.startedAt);
    expect(pages.length).toBeGreaterThan(5);
    expect(stats.rateLimited).toBe(0);
    expect(stats.maxPerSlidingSecond).toBeLessThanOrEqual(10);
  }, 90_000);
});
