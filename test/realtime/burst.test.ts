/**
 * A bulk edit on a real-time list (src/webhooks/inbox-batcher.ts,
 * src/webhooks/receiver.ts, src/realtime/applier.ts): the emulator delivers
 * one callback per item as fast as it can and retries refused ones as the
 * platform does. The receiver answers every one (stored in batches, never
 * waiting on the applier), /healthz answers within a second at every probe,
 * and the mirror equals the platform without a scheduled pull.
 * (20,000 items: npm run bench realtime-burst.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectMirrorEqualsPlatform } from '../helpers/world.js';
import { createDb } from '../../src/db.js';
import { acquireLock, listLockName } from '../../src/sync/lock.js';
import { APP, closeRunning, LIST, settled, start, until, type Running } from './support.js';

/**
 * 2,000 at once here: this process also runs the emulator that opens every delivery's connection, beside
 * two other test files on two cores, and an answer later than the emulator's 5 s counts as refused.
 * The product's 20,000 (the receiver alone in its process) is `npm run bench realtime-burst`.
 */
const ITEMS = Number(process.env.BURST_ITEMS ?? 2000);

afterEach(closeRunning);

describe('a bulk edit on a real-time list', () => {
  it(`${ITEMS} item events at once: every callback stored and answered, /healthz within 1 s throughout, the mirror equal within 60 s`, async () => {
    const r = await start({ items: ITEMS });
    const probes: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t = performance.now();
        const res = await fetch(`${r.serve.url}/healthz`, { signal: AbortSignal.timeout(5000) });
        await res.text();
        probes.push(performance.now() - t);
        await new Promise((ok) => setTimeout(ok, 200));
      }
    })();
    const started = Date.now();
    expect(await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } })).toBe(ITEMS);
    await settled(r, 60_000);
    const seconds = (Date.now() - started) / 1000;
    probing = false;
    await probe;
    const { stats } = await r.w.emu.admin.itemHooks();
    expect(stats.delivered).toBe(ITEMS);
    expect(stats.refused).toBe(0);
    expect(stats.abandoned).toBe(0);
    expect(probes.length).toBeGreaterThan(2);
    expect(Math.max(...probes)).toBeLessThan(1000);
    await expectMirrorEqualsPlatform(r.w, LIST, APP, LIST);
    expect(seconds).toBeLessThan(60);
  });

  it('a backlog past the threshold: one incremental pull instead of re-reading each item, and the events it covers consumed', async () => {
    const items = 1000;
    const r = await start({ items, applier: { backlogPullEvents: 100 } });
    // Deliveries held back a little, so the backlog builds before the first flush.
    await r.w.emu.admin.setItemDelivery({ delayMs: 300 });
    const before = Number(((await r.w.t.db('listsync.sync_runs').where({ job: 'pull' }).max('id as id').first()) as { id: number }).id);
    await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } });
    await settled(r, 60_000);
    await expectMirrorEqualsPlatform(r.w, LIST, APP, LIST);
    const pulls = (await r.w.t.db('listsync.sync_runs').where({ job: 'pull', status: 'succeeded' }).where('id', '>', before)) as unknown[];
    expect(pulls).toHaveLength(1);
    const stats = (await r.w.t.db('listsync.realtime_stats').where({ list_name: LIST }).first()) as {
      events_applied: string;
      items_reread: string;
    };
    expect(Number(stats.events_applied)).toBe(items);
    // Only what reached the queue before the pull was asked (and what it did not bring) was re-read item by item.
    expect(Number(stats.items_reread)).toBeLessThan(items / 2);
  });

  it('a backlog pull that never ends does not hold the events back: the items are re-read beside it', async () => {
    const items = 1000;
    let asked = 0;
    // A pull that can start but never finishes (a platform too slow for it, a run stuck on a lock).
    const backlogPuller = { canStart: async () => true, run: () => (asked++, new Promise<boolean>(() => undefined)) };
    const r = await start({ items, applier: { backlogPullEvents: 100, backlogPuller } });
    await r.w.emu.admin.setItemDelivery({ delayMs: 300 });
    const started = Date.now();
    await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } });
    await settled(r, 60_000);
    expect(asked).toBe(1);
    await expectMirrorEqualsPlatform(r.w, LIST, APP, LIST);
    // The pull is waited for as long as its one page should take (about 15 s here), not longer.
    expect(Date.now() - started).toBeLessThan(45_000);
  });

  it('a backlog while another process runs a pull of the list: no pull is asked, the items are re-read at once', async () => {
    const items = 1000;
    const r = await start({ items, applier: { backlogPullEvents: 100 } });
    await r.w.emu.admin.setItemDelivery({ delayMs: 300 });
    // Another process's run holds the list's lock for the whole burst.
    const other = createDb({ url: r.w.t.url, poolMax: 1 });
    const lock = await acquireLock(other, listLockName(LIST));
    try {
      const before = await pullRuns(r);
      await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } });
      await settled(r, 30_000);
      await expectMirrorEqualsPlatform(r.w, LIST, APP, LIST);
      expect(await pullRuns(r)).toBe(before);
      expect(r.w.logs.join('')).toMatch(/a backlog of item events: re-read by ID \(a pull of the list cannot start now\)/);
    } finally {
      await lock.release();
      await other.destroy();
    }
  });

  it('duplicate deliveries cost summary lines with their count, not a log line each', async () => {
    const items = 300;
    const r = await start({ items, summaryEveryMs: 500 });
    await r.w.emu.admin.setItemDelivery({ duplicateRate: 1 });
    await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } });
    await settled(r, 30_000);
    const summaries = () =>
      r.w.logs
        .join('')
        .split('\n')
        .filter((l) => l.trim().startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; msg: string; stored?: number; duplicates?: number })
        .filter((l) => l.level !== 'debug' && l.level !== 'trace' && /webhook event/.test(l.msg));
    // Every copy is a duplicate (and a copy answered too late for the emulator is delivered again: one more).
    const told = () => {
      const lines = summaries();
      const whole = lines.filter((l) => l.msg === 'webhook event stored').length;
      const counted = lines.filter((l) => /^webhook events stored: \d+ new/.test(l.msg));
      return {
        lines: lines.length,
        other: lines.length - whole - counted.length,
        stored: whole + counted.reduce((n, l) => n + (l.stored ?? 0), 0),
        duplicates: counted.reduce((n, l) => n + (l.duplicates ?? 0), 0),
      };
    };
    await until('the summary of every delivery', async () => told().stored === items && told().duplicates >= items, 10_000);
    const lines = told();
    // At info level and above: a new event after a quiet spell whole, the rest in summaries; a few lines for 600 deliveries.
    expect(lines.other).toBe(0);
    const inbox = (await r.w.t.db('listsync.webhook_inbox').count({ n: '*' })) as { n: string | number }[];
    expect(Number(inbox[0]!.n)).toBe(items);
    expect(lines.lines).toBeLessThan(20);
  });
});

async function pullRuns(r: Running): Promise<number> {
  return Number(((await r.w.t.db('listsync.sync_runs').where({ job: 'pull' }).count({ n: '*' })) as { n: string }[])[0]!.n);
}
