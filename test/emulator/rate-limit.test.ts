import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { FixedWindowLimiter, SlidingWindowLimiter, TokenBucketLimiter, createRateLimiter } from '../../src/emulator/rate-models.js';
import { type Envelope, QA_SEED, burst, call } from './helpers.js';

/**
 * The limit per API key in each form the platform may keep it: a sliding
 * second (the default), a token bucket (burst 10, refill 10/s) and a fixed
 * one-second window; each request counted after a varying delay.
 */

let frozen: RunningEmulator;
let bucket: RunningEmulator;
let fixed: RunningEmulator;
let real: RunningEmulator;
/** The frozen emulators' rate-limiter clock (ms): requests "in the same instant" really are. */
let t = 0;
const clock = { rateLimitClock: () => t };

beforeAll(async () => {
  frozen = await startEmulator({ port: 0, seed: QA_SEED, apiKeys: ['key-1', 'key-2'], ...clock });
  bucket = await startEmulator({ port: 0, seed: QA_SEED, rateModel: 'bucket', ...clock });
  fixed = await startEmulator({ port: 0, seed: QA_SEED, rateModel: 'fixed', rateJitterMs: 0, ...clock });
  real = await startEmulator({ port: 0, seed: QA_SEED });
});
afterAll(async () => {
  await Promise.all([frozen.close(), bucket.close(), fixed.close(), real.close()]);
});

const get = (emu: RunningEmulator) => call(emu, 'GET', '/lists/qa/things');
const statuses = async (emu: RunningEmulator, n: number): Promise<number[]> =>
  (await Promise.all(Array.from({ length: n }, () => get(emu)))).map((r) => r.status);

describe('rate limit', () => {
  it('11 requests in the same instant: exactly one 429 with Status 42900 and Retry-After', async () => {
    const replies = await Promise.all(Array.from({ length: 11 }, () => call<Envelope>(frozen, 'GET', '/lists/qa/things')));
    const limited = replies.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    const r = limited[0]!;
    expect(r.json.Status).toBe(42900);
    expect(r.json.Message).toMatch(/rate limit/i);
    expect(r.headers.get('retry-after')).toBe('1');
    const stats = await frozen.admin.stats();
    expect(stats.rateLimited).toBe(1);
    expect(stats.maxPerSlidingSecond).toBe(11);
  });

  it('limits per key: another key has its own bucket', async () => {
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => call(frozen, 'GET', '/lists/qa/things', undefined, { apiKey: 'key-2' })),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect((await call(frozen, 'GET', '/lists/qa/things', undefined, { apiKey: 'key-2' })).status).toBe(429);
  });

  it('by default a sliding second: half a second later still nothing, a full second after the first ten room for ten more', async () => {
    t = 100_000;
    expect((await statuses(frozen, 10)).every((s) => s === 200)).toBe(true);
    t += 500; // a bucket would have refilled 5 tokens by now
    const refused = await get(frozen);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    t += 499;
    expect(await statuses(frozen, 1)).toEqual([429]);
    t += 1;
    expect((await statuses(frozen, 12)).filter((s) => s === 200)).toHaveLength(10);
  });

  it('bucket: refills at 10 tokens a second, up to the burst', async () => {
    t = 200_000;
    expect((await statuses(bucket, 11)).filter((s) => s === 200)).toHaveLength(10);
    t += 100;
    expect(await statuses(bucket, 1)).toEqual([200]);
    expect(await statuses(bucket, 1)).toEqual([429]);
    t += 60_000;
    expect((await statuses(bucket, 12)).filter((s) => s === 200)).toHaveLength(10);
  });

  it('fixed: ten per second counted from the epoch, so twenty may straddle a border', async () => {
    t = 300_999;
    expect((await statuses(fixed, 11)).filter((s) => s === 200)).toHaveLength(10);
    t = 301_000;
    expect((await statuses(fixed, 11)).filter((s) => s === 200)).toHaveLength(10);
    t = 301_999;
    const refused = await get(fixed);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
  });

  it('one 429 at the Nth request when asked (rateLimitAtRequest), then the setting clears itself', async () => {
    t = 400_000;
    await bucket.admin.setFaults({ rateLimitAtRequest: 3 });
    const replies: number[] = [];
    for (let i = 0; i < 5; i++) replies.push((await get(bucket)).status);
    expect(replies).toEqual([200, 200, 429, 200, 200]);
    const limited = (await bucket.admin.requests()).filter((e) => e.status === 429).at(-1);
    expect(limited?.fault).toBe('rateLimitAtRequest');
    expect((await bucket.admin.faults()).rateLimitAtRequest).toBeNull();
  });

  it('with the real clock, a burst beyond the limit is refused', async () => {
    // Warm the code paths first; a busy machine still spreads "the same instant" out a little,
    // so the bound allows what refilled while the requests arrived.
    await call(real, 'GET', '/lists/qa/things', undefined, { apiKey: 'qa-key-2' });
    await real.admin.clearRequests();
    const replies = await burst(real.baseUrl, '/lists/qa/things', 25, 'qa-key');
    const log = await real.admin.requests();
    const spreadMs = (log.at(-1)?.startedAt ?? 0) - (log[0]?.startedAt ?? 0);
    const ok = replies.filter((r) => r.status === 200).length;
    expect(ok, `arrival spread ${spreadMs.toFixed(1)} ms`).toBeLessThanOrEqual(10 + Math.ceil(spreadMs / 100));
    expect(replies.some((r) => r.status === 429)).toBe(true);
    for (const r of replies.filter((x) => x.status === 429)) expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('counts a request when its handler runs, after the latency (the default); on arrival when asked', async () => {
    const limit = { rateLimit: { burst: 1, perSecond: 1 }, rateJitterMs: 0, faults: { latencyMs: 300 } };
    const handler = await startEmulator({ port: 0, seed: QA_SEED, ...limit, ...clock });
    const arrival = await startEmulator({ port: 0, seed: QA_SEED, ...limit, rateCountAt: 'arrival', ...clock });
    try {
      for (const [emu, second] of [
        [handler, 429],
        [arrival, 200],
      ] as const) {
        t = 500_000;
        const first = get(emu);
        await new Promise((r) => setTimeout(r, 100)); // arrived, its handler not run yet
        t = 505_000;
        expect((await first).status).toBe(200);
        t = 505_500; // half a second after the handler ran; 5.5 s after the first arrived
        expect((await get(emu)).status).toBe(second);
      }
    } finally {
      await Promise.all([handler.close(), arrival.close()]);
    }
  });

  it('hidden: the answers show how much the handler delay varies, each one after the whole of it', async () => {
    const hidden = await startEmulator({ port: 0, seed: QA_SEED, rateJitterMs: 60, rateCountAt: 'hidden', faults: { latencyMs: 20 } });
    try {
      const rtts: number[] = [];
      for (let i = 0; i < 8; i++) {
        const started = performance.now();
        expect((await get(hidden)).status).toBe(200);
        rtts.push(performance.now() - started);
      }
      // Latency 20 ms, then the whole jitter (60 ms) and up to 60 ms more: never quicker than 80 ms, and varying.
      expect(Math.min(...rtts)).toBeGreaterThanOrEqual(79);
      expect(Math.max(...rtts) - Math.min(...rtts)).toBeGreaterThan(10);
    } finally {
      await hidden.close();
    }
  });

  it('the admin API is never rate-limited', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => frozen.admin.stats()));
    expect(results).toHaveLength(30);
  });

  it('the sliding and fixed windows arithmetic', () => {
    let now = 0;
    const sliding = new SlidingWindowLimiter({ burst: 2, perSecond: 4 }, () => now); // 2 in any 500 ms
    expect([sliding.take('k'), sliding.take('k')].every((d) => d.allowed)).toBe(true);
    now = 499;
    expect(sliding.take('k')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    now = 500;
    expect([sliding.take('k'), sliding.take('k'), sliding.take('k')].map((d) => d.allowed)).toEqual([true, true, false]);
    now = 999;
    expect(sliding.take('k')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    const win = new FixedWindowLimiter({ burst: 2, perSecond: 4 }, () => now); // 2 per [k*500, (k+1)*500)
    now = 499;
    expect([win.take('k'), win.take('k'), win.take('k')].map((d) => d.allowed)).toEqual([true, true, false]);
    now = 500;
    expect([win.take('k'), win.take('k'), win.take('k')].map((d) => d.allowed)).toEqual([true, true, false]);
    expect(createRateLimiter({ burst: 10, perSecond: 10 }).settings).toEqual({
      burst: 10,
      perSecond: 10,
      model: 'sliding',
      jitterMs: 20,
      countAt: 'handler',
    });
    expect(() => createRateLimiter({ burst: 10, perSecond: 10, countAt: 'later' as never })).toThrow(/countAt/);
    expect(() => createRateLimiter({ burst: 10, perSecond: 10, jitterMs: -1 })).toThrow(/jitterMs/);
  });

  it('the bucket arithmetic', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter({ burst: 2, perSecond: 4 }, () => now);
    expect(limiter.take('k')).toEqual({ allowed: true });
    expect(limiter.take('k')).toEqual({ allowed: true });
    expect(limiter.take('k')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    now = 250;
    expect(limiter.take('k')).toEqual({ allowed: true });
    expect(limiter.take('k').allowed).toBe(false);
    now = 10_000;
    expect([limiter.take('k'), limiter.take('k'), limiter.take('k')].map((d) => d.allowed)).toEqual([true, true, false]);
    const slow = new TokenBucketLimiter({ burst: 1, perSecond: 0.2 }, () => 0);
    slow.take('k');
    expect(slow.take('k')).toEqual({ allowed: false, retryAfterSeconds: 5 });
  });
});
