/**
 * The request budget shared through Postgres: reservations from several
 * budgets interleave without overlapping, pauses are shared, two
 * processes paging the same account stay within the limit together, and
 * what a 429 taught one process (no bursts, a wider margin) is how the next
 * process on the account starts.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { PlatformClient } from '../../src/platform/client.js';
import { RateLimiter } from '../../src/platform/rate-limiter.js';
import { readLimiterState } from '../../src/store/rate-budget.js';
import { SharedBudget, budgetAccount } from '../../src/platform/shared-budget.js';
import { type TestDatabase, createTestDatabase } from '../helpers/db.js';
import { maxInSlidingWindow } from './manual-clock.js';
import { configFor, distinctiveKey } from './support.js';

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase();
});

afterAll(async () => {
  await tdb?.drop();
});

describe('budgetAccount', () => {
  it('is platform.account, or a hash that does not contain the key', () => {
    expect(budgetAccount({ account: 'acme', baseUrl: 'https://x/v1', apiKey: 'secret-key-1' })).toBe('acme');
    const a = budgetAccount({ baseUrl: 'https://x/v1', apiKey: 'secret-key-1' });
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a).not.toContain('secret-key-1');
    expect(budgetAccount({ baseUrl: 'https://x/v1', apiKey: 'secret-key-2' })).not.toBe(a);
    expect(budgetAccount({ baseUrl: 'https://y/v1', apiKey: 'secret-key-1' })).not.toBe(a);
  });
});

describe('SharedBudget', () => {
  it('hands out slots in order across budgets: up to the limit at once, each a window after the one the limit before', async () => {
    const account = 'reserve-test';
    const window = { cap: 4, windowMs: 100 };
    const budgets = [4, 3, 1, 2].map((count) => ({ count, budget: new SharedBudget({ db: tdb.db, account }) }));
    await budgets[0]!.budget.reserve(4, window); // one reservation of four first, then three at once
    await Promise.all(budgets.slice(1).map(({ count, budget }) => budget.reserve(count, window)));
    // In database time, all the slots handed out, in the order they were handed out: each reservation is
    // a run of slots, so they sort by their first slot, then their last (two may start in the same burst).
    const slots = budgets
      .map(({ budget }) => budget.lastReservation!.dbSlotsMs)
      .sort((x, y) => x[0]! - y[0]! || x.at(-1)! - y.at(-1)!)
      .flat();
    expect(slots).toHaveLength(10);
    for (let i = 1; i < slots.length; i++) expect(slots[i]!).toBeGreaterThanOrEqual(slots[i - 1]!);
    for (let i = 4; i < slots.length; i++) expect(slots[i]!).toBeGreaterThanOrEqual(slots[i - 4]! + 100 - 0.001);
    // The first four go together; the fifth waits a window, not one interval.
    expect(slots.slice(0, 4)).toEqual(Array(4).fill(slots[0]));
    expect(budgets[0]!.budget.lastReservation!.dbSlotsMs).toEqual(slots.slice(0, 4));
    expect(slots[4]! - slots[0]!).toBeGreaterThanOrEqual(100 - 0.001);
    expect(maxInSlidingWindow(slots, 100)).toBeLessThanOrEqual(4);
    const row = (
      await tdb.db.raw(
        `select extract(epoch from next_slot)::float8 * 1000 as next_ms, recent_slots_ms from listsync.rate_budget where account = ?`,
        [account],
      )
    ).rows[0] as { next_ms: number; recent_slots_ms: number[] };
    expect(row.next_ms).toBeCloseTo(slots.at(-1)!, 0);
    expect(row.recent_slots_ms.map(Number)).toEqual(slots.slice(-4));
    expect(budgets[0]!.budget.roundTrips).toBe(1);
  });

  it("keeps bursts to `burst` slots, each a burst window after the one `burst` before, within the limit's window", async () => {
    const a = new SharedBudget({ db: tdb.db, account: 'burst-test' });
    await a.reserve(12, { cap: 10, windowMs: 1030, burst: 5, burstWindowMs: 515 });
    const s = a.lastReservation!.dbSlotsMs;
    expect(s.slice(0, 5)).toEqual(Array(5).fill(s[0]));
    expect(s.slice(5, 10)).toEqual(Array(5).fill(s[0]! + 515));
    expect(s.slice(10)).toEqual(Array(2).fill(s[0]! + 1030));
  });

  it('a pause recorded by one budget holds back reservations of the others', async () => {
    const account = 'pause-test';
    const a = new SharedBudget({ db: tdb.db, account });
    const b = new SharedBudget({ db: tdb.db, account });
    const now = Date.now();
    await a.pause(now + 1500);
    const until = await b.pausedUntil();
    expect(until).toBeGreaterThan(now + 1400);
    const [slot] = await b.reserve(1, { cap: 10, windowMs: 1030 });
    expect(slot!).toBeGreaterThanOrEqual(now + 1490);
  });

  it('knows whether another process reserved slots of the account lately', async () => {
    const account = 'contended-test';
    const a = new SharedBudget({ db: tdb.db, account });
    const b = new SharedBudget({ db: tdb.db, account });
    const w = { cap: 10, windowMs: 1030 };
    await a.reserve(2, w);
    await a.reserve(2, w);
    expect(a.contended).toBe(false); // only its own reservations so far
    await b.reserve(1, w);
    expect(b.contended).toBe(true);
    await a.reserve(1, w);
    expect(a.contended).toBe(true);
    const other = new SharedBudget({ db: tdb.db, account: 'contended-test-2' });
    await other.reserve(1, w);
    expect(other.contended).toBe(false); // another account is no contention
  });

  it('two limiters on one account share the rate', async () => {
    const account = 'limiter-test';
    const times: number[] = [];
    // The window each limiter reserved in when it granted: a second plus its margins, wider while
    // its timers fire late (a loaded machine), so that the other process's slots stay apart too.
    let widest = 0;
    const limiters = [0, 1].map(() => new RateLimiter({ requestsPerSecond: 10, source: new SharedBudget({ db: tdb.db, account }) }));
    await Promise.all(
      limiters.flatMap((l) =>
        Array.from({ length: 13 }, () =>
          l.acquire().then((slot) => {
            slot.sent();
            times.push(Date.now());
            widest = Math.max(widest, l.windowMs());
          }),
        ),
      ),
    );
    expect(times).toHaveLength(26);
    expect(maxInSlidingWindow(times)).toBeLessThanOrEqual(10);
    // Ten went in the first window, ten in the second, the rest in the third: the two shared one log.
    times.sort((x, y) => x - y);
    expect(widest).toBeGreaterThanOrEqual(1030);
    // The twentieth left with the second window, not a third: within one window (as wide as it
    // was made) and the database round trips of a reservation after the first.
    expect(times[19]! - times[0]!).toBeLessThan(widest + 700);
    expect(times[20]! - times[0]!).toBeGreaterThanOrEqual(2 * 1030 - 100);
  });
});

type PagerResult = {
  ids: string[];
  stats: { requests: number; rateLimited: number };
  roundTrips: number;
  startedAt: number;
  finishedAt: number;
};

/** The fixture pager in a process of its own, paging demo/orders once a line arrives on its stdin. */
function startPager(emu: RunningEmulator, key: string, env: Record<string, string> = {}) {
  const script = fileURLToPath(new URL('./fixtures/pager.ts', import.meta.url));
  const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
  const child = spawn(tsx, [script], {
    env: { ...process.env, BASE_URL: emu.baseUrl, API_KEY: key, DATABASE_URL: tdb.url, PAGE_SIZE: '200', MAX_IN_FLIGHT: '4', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.startsWith('ready\n')) onReady();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<PagerResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`pager exited with ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1)!) as PagerResult);
    });
  });
  done.catch(() => onReady());
  return { child, ready, done };
}

describe('what a 429 taught the account', () => {
  // One emulator per account, so that each request log holds one account's requests.
  let taught: RunningEmulator;
  let fresh: RunningEmulator;

  beforeAll(async () => {
    const start = (tag: string) => startEmulator({ port: 0, sample: true, items: 3000, apiKeys: [distinctiveKey(tag)] });
    [taught, fresh] = await Promise.all([start('taught'), start('fresh')]);
  });

  afterAll(async () => {
    await Promise.all([taught?.close(), fresh?.close()]);
  });

  /** Gaps between the arrivals of the first `n` requests the emulator saw (ms). */
  async function firstGaps(emu: RunningEmulator, n: number): Promise<number[]> {
    const log = (await emu.admin.requests()).slice(0, n);
    return log.slice(1).map((e, i) => e.startedAt - log[i]!.startedAt);
  }

  it('a 429 seen by one process: the next process on the account starts evenly spaced, not in bursts', async () => {
    // The first process: one request answered 429, retried after the pause; what it taught is stored.
    await taught.admin.setFaults({ rateLimitAtRequest: 1 });
    const budget = new SharedBudget({ db: tdb.db, account: budgetAccount(taught) });
    const first = new PlatformClient({ config: configFor(taught), budget });
    try {
      expect((await first.queryItems('demo', 'orders', { PageSize: 1 })).items).toHaveLength(1);
      expect(first.stats().rateLimited).toBe(1);
    } finally {
      await first.close();
    }
    await expect
      .poll(async () => (await readLimiterState(tdb.db)).find((s) => s.account === budget.account))
      .toMatchObject({
        burstsAllowed: false,
        marginMs: 20,
        throttledTotal: 1,
      });

    // Two more processes, started together: one on the taught account, one on an account with no 429 seen.
    await taught.admin.clearRequests();
    const pagers = [startPager(taught, taught.apiKey), startPager(fresh, fresh.apiKey)];
    await Promise.all(pagers.map((p) => p.ready));
    for (const p of pagers) p.child.stdin.end('go\n');
    const results = await Promise.all(pagers.map((p) => p.done));
    for (const r of results) {
      expect(r.ids).toHaveLength(3000);
      expect(r.stats.rateLimited).toBe(0);
    }
    // Taught: about a tenth of the widened window ((1030 + 20) / 10 ms) between requests, on a schedule that lets a
    // request follow one that left late up to half an interval sooner.
    const spaced = await firstGaps(taught, 6);
    const sum = (gaps: number[]) => gaps.reduce((a, b) => a + b, 0);
    for (const gap of spaced) expect(gap, `gaps ${spaced.join(', ')}`).toBeGreaterThanOrEqual(50);
    expect(sum(spaced), `gaps ${spaced.join(', ')}`).toBeGreaterThanOrEqual(5 * 100);
    // Not taught: the pages fetched ahead leave together.
    const together = await firstGaps(fresh, 6);
    expect(Math.min(...together), `gaps ${together.join(', ')}`).toBeLessThan(50);
    expect(sum(together), `gaps ${together.join(', ')}`).toBeLessThan(5 * 100);
  });
});

describe('two processes sharing one account', () => {
  let emu: RunningEmulator;
  const key = distinctiveKey('shared');

  beforeAll(async () => {
    emu = await startEmulator({
      port: 0,
      sample: true,
      items: 3000,
      apiKeys: [key],
      faults: { latencyMs: 200 },
      rateLimit: { burst: 10, perSecond: 10 },
    });
  });

  afterAll(async () => {
    await emu?.close();
  });

  it('together stay within the limit', async () => {
    await emu.admin.clearRequests();
    const script = fileURLToPath(new URL('./fixtures/pager.ts', import.meta.url));
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    type Result = {
      ids: string[];
      stats: { requests: number; rateLimited: number };
      roundTrips: number;
      startedAt: number;
      finishedAt: number;
    };
    const start = () => {
      const child = spawn(tsx, [script], {
        env: { ...process.env, BASE_URL: emu.baseUrl, API_KEY: key, DATABASE_URL: tdb.url, PAGE_SIZE: '200', MAX_IN_FLIGHT: '4' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      let onReady: () => void = () => undefined;
      const ready = new Promise<void>((r) => (onReady = r));
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.startsWith('ready\n')) onReady();
      });
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const done = new Promise<Result>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', (code) => {
          if (code !== 0) reject(new Error(`pager exited with ${code}: ${err}`));
          else resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Result);
        });
      });
      done.catch(() => onReady());
      return { child, ready, done };
    };
    const children = [start(), start()];
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.child.stdin.end('go\n');
    const [a, b] = await Promise.all(children.map((c) => c.done));
    if (!a || !b) throw new Error('pager results missing');
    expect(a.ids).toHaveLength(3000);
    expect(b.ids).toHaveLength(3000);
    // They really ran at the same time.
    expect(Math.max(a.startedAt, b.startedAt)).toBeLessThan(Math.min(a.finishedAt, b.finishedAt));
    const stats = await emu.admin.stats();
    expect(stats.total).toBe(30);
    expect(stats.rateLimited).toBe(0);
    expect(stats.maxPerSlidingSecond).toBeLessThanOrEqual(10);
    expect(a.stats.rateLimited + b.stats.rateLimited).toBe(0);
  });
});
