import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { DEFAULT_FAULTS } from '../../src/emulator/faults.js';
import { type Envelope, QA_SEED, call, query } from './helpers.js';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false, faults: { faultSeed: 7 } });
});
afterEach(async () => {
  await emu.admin.setFaults({ ...DEFAULT_FAULTS, faultSeed: 7 });
});
afterAll(async () => {
  await emu.close();
});

describe('faults', () => {
  it('pageFault gives a malformed items/query answer on demand; unknownStatus only once; a bad kind is refused', async () => {
    await emu.admin.setFaults({ pageFault: { kind: 'nullData' } });
    const nulled = await query(emu, 'qa/things', { PageIndex: 1, PageSize: 2 });
    expect(nulled.json).toMatchObject({ Status: 0, Data: null });
    expect((nulled.json as Envelope).TotalCount).toBeUndefined();
    await emu.admin.setFaults({ pageFault: { kind: 'ignorePageIndex' } });
    const p1 = await query(emu, 'qa/things', { PageIndex: 1, PageSize: 2 });
    const p2 = await query(emu, 'qa/things', { PageIndex: 2, PageSize: 2 });
    expect(p2.json!.Data).toEqual(p1.json!.Data);
    await emu.admin.setFaults({ pageFault: { kind: 'unknownStatus' } });
    expect((await query(emu, 'qa/things', { PageIndex: 1, PageSize: 2 })).json).toMatchObject({ Status: 50010 });
    expect((await query(emu, 'qa/things', { PageIndex: 1, PageSize: 2 })).json).toMatchObject({ Status: 0 });
    expect((await emu.admin.faults()).pageFault).toBeNull();
    await expect(emu.admin.setFaults({ pageFault: { kind: 'bogus' as 'nullData' } })).rejects.toThrow(/pageFault/);
  });

  it('errorRate 1 answers 500/502/503 with an HTML or envelope body', async () => {
    await emu.admin.setFaults({ errorRate: 1 });
    const replies = await Promise.all(Array.from({ length: 12 }, () => call(emu, 'GET', '/lists/qa/things')));
    for (const r of replies) expect([500, 502, 503]).toContain(r.status);
    expect(replies.some((r) => r.text.startsWith('<!DOCTYPE html>'))).toBe(true);
    expect(replies.some((r) => (r.json as Envelope | undefined)?.Status === 50000)).toBe(true);
    // The admin API is never faulted.
    expect((await emu.admin.stats()).total).toBeGreaterThan(0);
  });

  it('dropRate 1 destroys the connection without an answer', async () => {
    await emu.admin.setFaults({ dropRate: 1 });
    await expect(call(emu, 'GET', '/lists/qa/things')).rejects.toThrow();
    const log = await emu.admin.requests();
    expect(log.at(-1)).toMatchObject({ fault: 'drop', status: null });
  });

  it('timeoutRate 1 holds the request timeoutMs and then cuts it', async () => {
    await emu.admin.setFaults({ timeoutRate: 1, timeoutMs: 80 });
    const t0 = performance.now();
    await expect(call(emu, 'GET', '/lists/qa/things')).rejects.toThrow();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(70);
  });

  it('malformedRate 1 answers HTTP 200 with JSON that does not parse', async () => {
    await emu.admin.setFaults({ malformedRate: 1 });
    const r = await query(emu, 'qa/things', {});
    expect(r.status).toBe(200);
    expect(() => JSON.parse(r.text) as unknown).toThrow();
  });

  it('latency and jitter delay every answer', async () => {
    await emu.admin.setFaults({ latencyMs: 60, jitterMs: 20 });
    const t0 = performance.now();
    const r = await call(emu, 'GET', '/lists/qa/things');
    expect(r.status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
  });

  it('emptyPages answers Data [] with the real TotalCount for those pages', async () => {
    await emu.admin.setFaults({ emptyPages: [2] });
    const p1 = await query(emu, 'qa/many', { PageIndex: 1, PageSize: 10 });
    const p2 = await query(emu, 'qa/many', { PageIndex: 2, PageSize: 10 });
    expect(p1.json.Data.length).toBe(10);
    expect(p2.json).toMatchObject({ Status: 0, Data: [], TotalCount: 45 });
    const log = await emu.admin.requests();
    expect(log.at(-1)).toMatchObject({ fault: 'emptyPage', pageIndex: 2 });
  });

  it('a rate-limit storm answers 429 until it ends; null clears it', async () => {
    await emu.admin.setFaults({ rateLimitStorm: 30_000 });
    const r = await call<Envelope>(emu, 'GET', '/lists/qa/things');
    expect(r.status).toBe(429);
    expect(r.json.Status).toBe(42900);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(29);
    const settings = await emu.admin.setFaults({ rateLimitStorm: null });
    expect(settings.rateLimitStorm).toBeNull();
    expect((await call(emu, 'GET', '/lists/qa/things')).status).toBe(200);
  });

  it('faultPaths limits faults to matching /v1 paths', async () => {
    await emu.admin.setFaults({ errorRate: 1, faultPaths: '/fields$' });
    expect((await call(emu, 'GET', '/lists/qa/things')).status).toBe(200);
    expect((await call(emu, 'GET', '/lists/qa/things/fields')).status).toBeGreaterThanOrEqual(500);
  });

  it('a dropped write was applied before or after the connection died, about half the time each', async () => {
    await emu.admin.setFaults({ dropRate: 1, faultPaths: '/items/\\d+$' });
    const id = String((await emu.admin.exportList('qa', 'things')).items[0]!['ListDataID']);
    const before = Number((await emu.admin.getItem('qa', 'things', id))['RowVersion']);
    const seq = (await emu.admin.requests()).at(-1)?.seq ?? 0;
    for (let i = 0; i < 12; i++) {
      await expect(call(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 0, Data: { Notes: `try ${i}` } })).rejects.toThrow();
    }
    const after = Number((await emu.admin.getItem('qa', 'things', id))['RowVersion']);
    const faults = (await emu.admin.requests(seq)).map((e) => e.fault);
    const applied = faults.filter((f) => f === 'drop-after-apply').length;
    expect(faults.filter((f) => f === 'drop').length + applied).toBe(12);
    expect(after - before).toBe(applied);
    expect(applied).toBeGreaterThan(0);
    expect(applied).toBeLessThan(12);
  });

  it('rejects invalid settings naming the key; the same seed reproduces the same faults', async () => {
    await expect(emu.admin.setFaults({ errorRate: 2 })).rejects.toThrow(/errorRate/);
    await expect(emu.admin.setFaults({ bogus: 1 } as never)).rejects.toThrow(/bogus/);
    const run = async (): Promise<number[]> => {
      await emu.admin.setFaults({ errorRate: 0.5, faultSeed: 99 });
      const out: number[] = [];
      for (let i = 0; i < 10; i++) out.push((await call(emu, 'GET', '/lists/qa/things')).status);
      return out;
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(new Set(a).size).toBeGreaterThan(1);
  });
});
