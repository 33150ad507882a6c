/**
 * What the request limiter learned from 429 answers, per account, as
 * `status` (text and --json) and `/metrics` show it: bursts off, the widened
 * margin and the 429s counted after one 429; a warning once 429s keep coming
 * at the widened margin (the configured limit looks too high). Real binary,
 * real Postgres, the emulator over HTTP answering 429 on demand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import { budgetAccount } from '../src/platform/shared-budget.js';
import { readLimiterState } from '../src/store/rate-budget.js';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

let w: World;
beforeAll(async () => {
  w = await startWorld({ emulator: { items: 40 } });
});
afterAll(async () => w?.close());

const env = () => ({ PLATFORM_API_KEY: w.emu.apiKey });
const account = () => budgetAccount(w.config.platform);
const stored = async () => (await readLimiterState(w.t.db)).find((s) => s.account === account());

/** One request of the world's client answered 429 (then retried after the pause). */
async function one429(): Promise<void> {
  const before = w.client.stats().rateLimited;
  await w.emu.admin.setFaults({ rateLimitAtRequest: 1 });
  await w.client.queryItems('demo', 'orders', { PageSize: 1 });
  expect(w.client.stats().rateLimited).toBe(before + 1);
}

describe('what the request limiter learned, in status and /metrics', () => {
  it('after one 429: bursts off, a wider margin, one 429 counted; then a warning when 429s keep coming at that margin', async () => {
    await one429();
    await expect.poll(stored).toMatchObject({ burstsAllowed: false, marginMs: 20, throttledTotal: 1, limitTooHighAt: null });

    const r = await runCli(['--config', w.configFile, 'status'], { env: env(), cwd: w.cwd });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('request budget (what the limiter learned from 429 answers, per account):');
    expect(r.stdout).toMatch(/sha256:[0-9a-f]{12}… \(this config\)\s+off \(evenly spaced\)\s+\+20 ms\s+1\s/);
    expect(r.stdout).not.toContain('looks higher than the platform allows');

    const metrics = createMetrics({ db: w.t.db, config: w.config, defaultMetrics: false });
    const text = await metrics.registry.metrics();
    const label = `{account="${account()}"}`;
    expect(text).toContain(`listsync_request_limiter_bursts_allowed${label} 0`);
    expect(text).toContain(`listsync_request_limiter_margin_seconds${label} 0.02`);
    expect(text).toContain(`listsync_request_limiter_rate_limited${label} 1`);
    expect(text).toContain(`listsync_request_limiter_limit_too_high_timestamp_seconds${label} 0`);

    // Two more 429s within the minute, each to a request sent after the last lesson: the rate is halved.
    await one429();
    await one429();
    expect(w.client.rateFactor()).toBeLessThan(1);
    await expect.poll(async () => (await stored())?.limitTooHighAt).not.toBeNull();
    const warned = await runCli(['--config', w.configFile, 'status'], { env: env(), cwd: w.cwd });
    expect(warned.stdout).toMatch(
      /\(this config\).*\+(?:5[5-9]|60) ms\s+3\s[\s\S]*429s kept coming at the widened margin \(.+\), so the rate was halved: platform\.requestsPerSecond \(100\) looks higher than the platform allows; lower it/,
    );
    const json = JSON.parse((await runCli(['--config', w.configFile, 'status', '--json'], { env: env(), cwd: w.cwd })).stdout) as {
      requestBudget: { account: string; current: boolean; burstsAllowed: boolean; marginMs: number; throttledTotal: number }[];
    };
    expect(json.requestBudget[0]).toMatchObject({ account: account(), current: true, burstsAllowed: false, throttledTotal: 3 });
    // 60 ms after the third lesson, relaxing by half every 15 minutes (RELAX_HALF_LIFE_MS): the status
    // commands of a loaded machine may read it a few seconds later, 59 ms from 11 s on.
    expect(json.requestBudget[0]!.marginMs).toBeGreaterThanOrEqual(55);
    expect(json.requestBudget[0]!.marginMs).toBeLessThanOrEqual(60);
    const after = await metrics.registry.metrics();
    expect(after).toMatch(new RegExp(`listsync_request_limiter_limit_too_high_timestamp_seconds\\{account="${account()}"\\} [1-9]`));
  });
});
