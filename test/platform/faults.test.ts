/**
 * The client under injected faults (emulator over real HTTP): 5xx, timeouts,
 * dropped connections, malformed bodies, rate-limit storms; which requests are
 * retried and which are not.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { PlatformClient, type RequestEvent } from '../../src/platform/client.js';
import { NotFoundError, RateLimitError, TransportError } from '../../src/platform/platform-errors.js';
import { configFor, distinctiveKey, everythingShown, memoryLogger } from './support.js';

const KEY = distinctiveKey('faults');
const { logger, lines } = memoryLogger();
let emu: RunningEmulator;

beforeAll(async () => {
  // A bucket: each test's new client knows nothing of what the one before sent on the key a moment ago,
  // and these tests are about faults, not about keeping to a strict sliding second (rate-limiter.test.ts).
  emu = await startEmulator({ port: 0, sample: true, items: 10_000, apiKeys: [KEY], idsAsNumbers: true, rateModel: 'bucket' });
});

afterAll(async () => {
  await emu?.close();
});

beforeEach(async () => {
  await emu.admin.setFaults({
    latencyMs: null,
    jitterMs: null,
    errorRate: null,
    timeoutRate: null,
    timeoutMs: null,
    dropRate: null,
    malformedRate: null,
    rateLimitStorm: null,
    emptyPages: null,
    faultPaths: null,
  });
  await emu.admin.clearRequests();
});

describe('PlatformClient under faults', () => {
  it('a full paging run through 5xx, timeouts, drops and broken bodies returns every item exactly once', async () => {
    await emu.admin.setFaults({
      latencyMs: 30,
      errorRate: 0.1,
      timeoutRate: 0.05,
      timeoutMs: 5000,
      dropRate: 0.05,
      malformedRate: 0.05,
      faultSeed: 42,
    });
    const events: RequestEvent[] = [];
    const client = new PlatformClient({
      config: configFor(emu, { timeoutMs: 1500, retries: 8 }),
      logger,
      onRequest: (e) => events.push(e),
    });
    try {
      const ids: string[] = [];
      for await (const page of client.pages('demo', 'orders', { Sorts: [{ Field: 'Created', Desc: false }] }, { pageSize: 250 })) {
        for (const item of page.items) ids.push(item.ListDataID as string);
      }
      const exported = await emu.admin.exportList('demo', 'orders');
      expect(ids).toHaveLength(exported.count);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(exported.items.map((i) => i.ListDataID).sort());

      const s = client.stats();
      expect(s.retries).toBeGreaterThan(0);
      expect(s.requests).toBe(40 + s.retries);
      expect(s.errors).toBe(0);
      const faults = (await emu.admin.requests()).map((r) => r.fault).filter(Boolean);
      expect(new Set(faults)).toEqual(new Set(['error', 'timeout', 'drop', 'malformed']));
      expect(events.filter((e) => e.outcome === 'retry')).toHaveLength(s.retries);
      const stats = await emu.admin.stats();
      expect(stats.rateLimited).toBe(0);
      expect(stats.maxPerSlidingSecond).toBeLessThanOrEqual(10);
    } finally {
      await client.close();
    }
  });

  it('a rate-limit storm pauses and teaches the limiter (no bursts, a wider margin); the request succeeds', async () => {
    await emu.admin.setFaults({ rateLimitStorm: 1200 });
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const r = await client.queryItems('demo', 'orders', { PageIndex: 1, PageSize: 5 });
      expect(r.items).toHaveLength(5);
      const s = client.stats();
      expect(s.rateLimited).toBeGreaterThanOrEqual(1);
      expect(s.retries).toBe(s.rateLimited);
      expect(client.rateFactor()).toBe(1); // one lesson: the configured rate stands
      expect(client.learnedLimits()).toMatchObject({ burstsAllowed: false, marginMs: 20, throttledTotal: 1 });
      // One 429 answered with Retry-After: 2 s; the retry waited for it instead of hammering.
      const log = await emu.admin.requests();
      expect(log.filter((e) => e.status === 429)).toHaveLength(s.rateLimited);
      expect(log.at(-1)!.status).toBe(200);
    } finally {
      await client.close();
    }
  });

  it('gives up after `retries` with a TransportError that keeps its cause and no apiKey', async () => {
    await emu.admin.setFaults({ errorRate: 1, faultPaths: 'items/query' });
    const client = new PlatformClient({ config: configFor(emu, { retries: 2 }), logger, random: () => 0.01 });
    try {
      const err = await client.queryItems('demo', 'orders', { PageIndex: 1, PageSize: 5 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'PlatformError', retries: 2 });
      expect((err as Error).message).toMatch(/^POST \/lists\/demo\/orders\/items\/query failed: HTTP 50\d.* \(after 2 retries\)$/);
      expect(await emu.admin.requests()).toHaveLength(3);
      expect(client.stats()).toMatchObject({ requests: 3, retries: 2, errors: 1 });

      await emu.admin.setFaults({ errorRate: 0, dropRate: 1 });
      const dropped = await client.queryItems('demo', 'orders', { PageIndex: 1, PageSize: 5 }).catch((e: unknown) => e);
      expect(dropped).toBeInstanceOf(TransportError);
      expect(dropped).toMatchObject({ retries: 2, httpStatus: undefined });
      expect((dropped as TransportError).code).toMatch(/^E[A-Z]+/);
      expect((dropped as Error).cause).toBeInstanceOf(Error);
      expect(everythingShown(dropped)).not.toContain(KEY);
    } finally {
      await client.close();
    }
  });

  it('createItem is not retried once the request may have reached the server', async () => {
    await emu.admin.setFaults({ dropRate: 1, faultPaths: 'orders/items$' });
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const err = await client.createItem('demo', 'orders', { Title: 'maybe created' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TransportError);
      expect(err).toMatchObject({ retries: 0, maybeApplied: true, method: 'POST' });
      expect((await emu.admin.requests()).filter((r) => r.method === 'POST')).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('createItem refused with 429 is retried (nothing was created)', async () => {
    await emu.admin.setFaults({ rateLimitStorm: 800, faultPaths: 'orders/items$' });
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const id = await client.createItem('demo', 'orders', { Title: 'after storm' });
      expect(id).toMatch(/^\d+$/);
      const posts = (await emu.admin.requests()).filter((r) => r.method === 'POST');
      expect(posts.length).toBeGreaterThanOrEqual(2);
      expect(posts.at(-1)!.status).toBe(200);
      expect(client.stats().rateLimited).toBe(posts.length - 1);
    } finally {
      await client.close();
    }
  });

  it('updateItem is not resent after a dropped connection: a TransportError that says maybeApplied, so the caller reads the item first', async () => {
    const client0 = new PlatformClient({ config: configFor(emu), logger });
    const id = await client0.createItem('demo', 'orders', { Title: 'to update' });
    await client0.close();
    await emu.admin.setFaults({ dropRate: 1, faultPaths: `items/${id}$` });
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const err = await client.updateItem('demo', 'orders', id, 1, { Title: 'mine' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TransportError);
      expect(err).toMatchObject({ retries: 0, maybeApplied: true, method: 'PATCH' });
      expect((await emu.admin.requests()).filter((r) => r.method === 'PATCH')).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('deleteItem is retried after a dropped connection; finding nothing to delete then is a NotFoundError that says maybeApplied', async () => {
    const client0 = new PlatformClient({ config: configFor(emu), logger });
    const id = await client0.createItem('demo', 'orders', { Title: 'to delete' });
    await client0.close();
    await emu.admin.setFaults({ dropRate: 1, faultPaths: `items/${id}$` });
    let deleted: Promise<unknown> | undefined;
    const client = new PlatformClient({
      config: configFor(emu),
      logger,
      random: () => 0.99,
      onRequest: (e) => {
        if (e.outcome === 'retry' && !deleted) {
          // The first attempt was cut off; whether or not it was applied, the item is gone before the retry.
          deleted = emu.admin.setFaults({ dropRate: 0 }).then(() => emu.admin.deleteItem('demo', 'orders', id).catch(() => undefined));
        }
      },
    });
    try {
      const err = await client.deleteItem('demo', 'orders', id).catch((e: unknown) => e);
      await deleted;
      expect(err).toBeInstanceOf(NotFoundError);
      expect(err).toMatchObject({ status: 40400, retries: 1, maybeApplied: true, method: 'DELETE' });
      expect((await emu.admin.requests()).filter((r) => r.method === 'DELETE')).toHaveLength(2);
      const read = await client.getItem('demo', 'orders', id).catch((e: unknown) => e);
      expect(read).toBeInstanceOf(NotFoundError);
    } finally {
      await client.close();
    }
  });

  it('getItem is retried through a 5xx and reads an ID sent as a bare JSON number without losing digits', async () => {
    const client0 = new PlatformClient({ config: configFor(emu), logger });
    const id = await client0.createItem('demo', 'orders', { Title: 'to read' });
    await client0.close();
    await emu.admin.setFaults({ errorRate: 1, faultPaths: `items/${id}$` });
    let healed: Promise<unknown> | undefined;
    const client = new PlatformClient({
      config: configFor(emu),
      logger,
      random: () => 0.99,
      onRequest: (e) => {
        if (e.outcome === 'retry' && !healed) healed = emu.admin.setFaults({ errorRate: 0 });
      },
    });
    try {
      const item = await client.getItem('demo', 'orders', id);
      await healed;
      expect(item).toMatchObject({ ListDataID: id, Title: 'to read', RowVersion: 1 });
      expect(client.stats().retries).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('a page that comes back empty inside TotalCount is fetched again', async () => {
    await emu.admin.setFaults({ emptyPages: [3] });
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const run = async () => {
        for await (const _page of client.pages('demo', 'orders', {}, { pageSize: 1000 }));
      };
      await expect(run()).rejects.toThrow(/page 3 came back empty 3 times although TotalCount is 10\d{3}/);
      expect(client.stats().retries).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('never logged the apiKey', () => {
    const text = lines.join('');
    expect(text).toContain('retrying');
    expect(text).not.toContain(KEY);
  });
});

// RateLimitError is what a storm longer than the retries looks like.
describe('RateLimitError', () => {
  it('after retries are exhausted', async () => {
    await emu.admin.setFaults({ rateLimitStorm: 60_000 });
    const client = new PlatformClient({ config: configFor(emu, { retries: 1, maxRetryAfterSeconds: 1 }), logger });
    try {
      const err = await client.queryItems('demo', 'orders', { PageSize: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err).toMatchObject({ httpStatus: 429, status: 42900, retries: 1, retryAfterMs: 1000 });
    } finally {
      await client.close();
      await emu.admin.setFaults({ rateLimitStorm: null });
    }
  });
});
