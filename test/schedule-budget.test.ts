/** What the schedules cost the request budget when nothing changed, as `check` prints it and `serve` logs it. */
import { afterEach, describe, expect, it } from 'vitest';
import { pullJob } from '../jobs/pull-job.js';
import { parseConfig, REALTIME_PULL_SCHEDULE } from '../src/config.js';
import { runCheck } from '../src/commands/check.js';
import { describeBudget, firesPerSecond, scheduleBudget } from '../src/serve/schedule-budget.js';
import { startWorld, type World } from './helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const configWith = (lists: number, schedule: Record<string, string>, extra: Record<string, unknown> = {}) =>
  parseConfig({
    platform: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k-1234', requestsPerSecond: 10 },
    database: { url: 'postgres://x@127.0.0.1/x' },
    users: { enabled: false },
    directory: { enabled: false },
    lists: Array.from({ length: lists }, (_, i) => ({ name: `l${i}`, appID: 'a', listID: `l${i}`, schedule, ...extra })),
    ...(extra.realtime ? { serve: { publicUrl: 'https://sync.example.com' } } : {}),
  });

describe('schedule budget', () => {
  it('counts fires per second of five- and six-field expressions', () => {
    expect(firesPerSecond('* * * * *')).toBeCloseTo(1 / 60, 9);
    expect(firesPerSecond('*/10 * * * *')).toBeCloseTo(1 / 600, 9);
    expect(firesPerSecond('*/5 * * * * *')).toBeCloseTo(1 / 5, 9);
    expect(firesPerSecond('0 * * * *')).toBeCloseTo(1 / 3600, 9);
    expect(firesPerSecond('30 3 * * *')).toBeCloseTo(1 / 86_400, 9);
    expect(firesPerSecond('17 3 * * 0')).toBeCloseTo(1 / (7 * 86_400), 9);
    expect(firesPerSecond('0,30 9-17 * * 1-5')).toBeCloseTo((2 * 9 * 5) / 7 / 86_400, 9);
  });

  it('100 lists pulled every minute fit; 700 do not, and it says which schedules cost most', () => {
    const fits = scheduleBudget(configWith(100, { pull: '* * * * *', push: '*/2 * * * *' }));
    // One page a fire, plus the field metadata asked again every 15 minutes (lists[].fieldsMaxAgeMinutes).
    expect(fits.needed).toBeCloseTo(100 / 60 + 100 / 900, 6);
    expect(fits.fieldMeta).toBeCloseTo(100 / 900, 6);
    expect(describeBudget(fits)).toEqual({
      warning: false,
      message:
        'the schedules need about 1.778 requests/s when nothing changed (0.111 of them for field metadata asked again as it ages out, as often as every 15 min: lists[].fieldsMaxAgeMinutes), 17.8 % of platform.requestsPerSecond (10)',
    });
    const over = describeBudget(scheduleBudget(configWith(700, { pull: '* * * * *', reconcile: '*/15 * * * *' })));
    expect(over.warning).toBe(true);
    expect(over.message).toMatch(/^the schedules need about 13\.223 requests\/s .* 132\.2 % .*: more than the account allows/);
    expect(over.message).toMatch(/costliest: pull:l\d+ 0\.02\/s/);
  });

  it('real-time lists pulled every minute are pointed out', () => {
    const b = describeBudget(scheduleBudget(configWith(2, { pull: '* * * * *' }, { realtime: true })));
    expect(b.warning).toBe(true);
    expect(b.message).toMatch(/real-time lists l0, l1 are pulled more often than every 15 minutes/);
  });

  it('a real-time list that sets no pull schedule is pulled hourly, and that is all it costs', () => {
    const config = configWith(3, {}, { realtime: true });
    expect(pullJob.scheduleOf(config, config.lists[0])).toBe(REALTIME_PULL_SCHEDULE);
    // Hourly, each pull also asks the field metadata (older than 15 minutes by then).
    expect(scheduleBudget(config).needed).toBeCloseTo(6 / 3600, 9);
    expect(describeBudget(scheduleBudget(config)).warning).toBe(false);
    const plain = configWith(1, {});
    expect(pullJob.scheduleOf(plain, plain.lists[0])).toBeUndefined();
  });

  it('check prints it as a warning without failing', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const over = {
      ...w.config,
      platform: { ...w.config.platform, requestsPerSecond: 0.01 },
      lists: [{ ...w.config.lists[0]!, schedule: { pull: '* * * * *' } }],
    };
    const findings = await runCheck(over);
    const line = findings.find((f) => f.check === 'schedules');
    expect(line).toMatchObject({ ok: true, warning: true });
    expect(line!.message).toMatch(/field metadata asked again as it ages out, as often as every 15 min/);
    expect(line!.message).toMatch(/177\.8 % of platform\.requestsPerSecond \(0\.01\): more than the account allows/);
    expect(findings.every((f) => f.ok)).toBe(true);
  });
});
