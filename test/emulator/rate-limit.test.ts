import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { TokenBucketLimiter } from '../../src/emulator/rate-limiter.js';
import { type Envelope, QA_SEED, burst, call } from './helpers.js';

/** Token bucket per API key: burst 10, refill 10/s. */

let frozen: RunningEmulator;
let real: RunningEmulator;
/** The frozen emulator's rate-limiter clock (ms): requests "in the same instant" really are. */
let t = 0;

beforeAll(async () => {
  frozen = await startEmulator({ port: 0, seed: QA_SEED, apiKeys: ['key-1', 'key-2'], rateLimitClock: () => t });
  real = await startEmulator({ port: 0, seed: QA_SEED });
});
afterAll(async () => {
  await Promise.all([frozen.close(), real.close()]);
});

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

  it('refills at 10 tokens a second, up to the burst', async () => {
    t += 100;
    expect((await call(frozen, 'GET', '/lists/qa/things')).status).toBe(200);
    expect((await call(frozen, 'GET', '/lists/qa/things')).status).toBe(429);
    t += 60_000;
    const replies = await Promise.all(Array.from({ length: 12 }, () => call(frozen, 'GET', '/lists/qa/things')));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
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

  it('the admin API is never rate-limited', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => frozen.admin.stats()));
    expect(results).toHaveLength(30);
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
