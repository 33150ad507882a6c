/**
 * The client against the emulator over real HTTP: throttled paging with
 * several requests in flight, typed operations and errors, no apiKey in logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, SAMPLE_FIELDS as F, startEmulator } from '../../src/emulator/index.js';
import { PlatformClient, type RequestEvent } from '../../src/platform/client.js';
import { AuthError, ConflictError, NotFoundError, ValidationError } from '../../src/platform/platform-errors.js';
import { query, where } from '../../src/platform/query.js';
import { configFor, distinctiveKey, everythingShown, memoryLogger } from './support.js';

const KEY = distinctiveKey('client');
const WRONG_KEY = distinctiveKey('wrong');
const { logger, lines } = memoryLogger();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    sample: true,
    items: 50_000,
    apiKeys: [KEY],
    faults: { latencyMs: 200 },
    rateLimit: { burst: 10, perSecond: 10 },
  });
});

afterAll(async () => {
  await emu?.close();
});

describe('PlatformClient over HTTP (emulator, 200 ms latency, 10 requests/s)', () => {
  it('pages 50 pages of 1000 within the limit, with several requests in flight', async () => {
    const events: RequestEvent[] = [];
    const client = new PlatformClient({ config: configFor(emu), logger, onRequest: (e) => events.push(e) });
    try {
      await emu.admin.clearRequests();
      const ids = new Set<string>();
      const indexes: number[] = [];
      for await (const page of client.pages('demo', 'orders', query().select('Title', F.status, 'Modified').orderBy('Created').build(), {
        pageSize: 1000,
      })) {
        indexes.push(page.index);
        expect(page.pageCount).toBe(50);
        expect(page.totalCount).toBe(50_000);
        for (const item of page.items) ids.add(item.ListDataID as string);
      }
      expect(indexes).toEqual(Array.from({ length: 50 }, (_v, i) => i + 1));
      expect(ids.size).toBe(50_000);

      const stats = await emu.admin.stats();
      expect(stats.rateLimited).toBe(0);
      expect(stats.maxPerSlidingSecond).toBeLessThanOrEqual(10);
      expect(stats.maxInFlight).toBeGreaterThan(1);
      const log = (await emu.admin.requests()).filter((r) => r.path.endsWith('/items/query'));
      expect(log).toHaveLength(50);
      const overlapping = log.some((a, i) =>
        log.some((b, j) => i !== j && a.startedAt < b.startedAt && b.startedAt < (a.finishedAt ?? Infinity)),
      );
      expect(overlapping).toBe(true);

      expect(client.stats()).toEqual({ requests: 50, retries: 0, rateLimited: 0, errors: 0 });
      expect(events).toHaveLength(50);
      expect(
        events.every(
          (e) => e.outcome === 'ok' && e.endpoint === 'items/query' && e.method === 'POST' && e.httpStatus === 200 && e.status === 0,
        ),
      ).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('an unknown apiKey fails at once with an AuthError, without retries', async () => {
    const client = new PlatformClient({ config: configFor({ baseUrl: emu.baseUrl, apiKey: WRONG_KEY }), logger });
    try {
      await emu.admin.clearRequests();
      const err = await client.queryItems('demo', 'orders', { PageIndex: 1, PageSize: 10 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthError);
      expect(err).toMatchObject({ httpStatus: 401, status: 40100, retries: 0, method: 'POST', path: '/lists/demo/orders/items/query' });
      expect((err as Error).message).toBe('POST /lists/demo/orders/items/query failed: HTTP 401, Status 40100 "Invalid apiKey"');
      expect(everythingShown(err)).not.toContain(WRONG_KEY);
      expect(await emu.admin.requests()).toHaveLength(1);
      expect(client.stats()).toEqual({ requests: 1, retries: 0, rateLimited: 0, errors: 1 });
    } finally {
      await client.close();
    }
  });

  it('a PageSize over 1000 cannot be sent', async () => {
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      await emu.admin.clearRequests();
      await expect(client.queryItems('demo', 'orders', { PageIndex: 1, PageSize: 1001 })).rejects.toThrow(ValidationError);
      await expect(client.searchUsers({ pageIndex: 1, pageSize: 5000 })).rejects.toThrow(/PageSize must be an integer from 1 to 1000/);
      expect(() => client.pages('demo', 'orders', {}, { pageSize: 2000 })).toThrow(ValidationError);
      expect(() => client.pages('demo', 'orders', { PageSize: 1500 })).toThrow(ValidationError);
      expect(() => client.userPages({ pageSize: 0 })).toThrow(ValidationError);
      expect(await emu.admin.requests()).toHaveLength(0);
      expect(client.stats().requests).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('typed operations: list, fields, query, create, update, users, hooks', async () => {
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const list = await client.getList('demo', 'orders');
      expect(list).toMatchObject({ AppID: 'demo', ListID: 'orders' });
      const fields = await client.getFields('demo', 'orders');
      expect(fields.map((f) => f.FieldName)).toEqual(expect.arrayContaining(['ListDataID', 'Title', F.status, 'Modified']));

      const shipped = await client.queryItems(
        'demo',
        'orders',
        query().where(F.status).eq('Shipped').orderBy('Modified', 'desc').pageSize(5).build(),
      );
      expect(shipped.items).toHaveLength(5);
      expect(shipped.totalCount).toBeGreaterThan(5);
      expect(shipped.items.every((i) => i[F.status] === 'Shipped')).toBe(true);

      const id = await client.createItem('demo', 'orders', { Title: 'Created by test', [F.orderNo]: 'T-1', [F.status]: 'New' });
      expect(id).toMatch(/^\d{19}$/);
      const byId = await client.queryItems('demo', 'orders', query().where('ListDataID').in([id]).build());
      expect(byId.items).toHaveLength(1);
      expect(byId.items[0]).toMatchObject({ ListDataID: id, Title: 'Created by test', RowVersion: 1 });

      await client.updateItem('demo', 'orders', id, 1, { Title: 'Updated once' });
      const stale = await client.updateItem('demo', 'orders', id, 1, { Title: 'Stale update' }).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(ConflictError);
      expect(stale).toMatchObject({ status: 40900, retries: 0, maybeApplied: false, method: 'PATCH' });
      await client.updateItem('demo', 'orders', id, 0, { Title: 'Forced' });

      const one = await client.getItem('demo', 'orders', id);
      expect(one).toMatchObject({ ListDataID: id, Title: 'Forced', RowVersion: 3, [F.orderNo]: 'T-1' });
      await client.deleteItem('demo', 'orders', id);
      const gone = await client.getItem('demo', 'orders', id).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(NotFoundError);
      expect(gone).toMatchObject({ method: 'GET', status: 40400, retries: 0 });
      const again = await client.deleteItem('demo', 'orders', id).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(NotFoundError);
      expect(again).toMatchObject({ method: 'DELETE', status: 40400, retries: 0, maybeApplied: false });

      const users = await client.searchUsers({ pageIndex: 1, pageSize: 3 });
      expect(users.items).toHaveLength(3);
      expect(users.items[0]!.UserID).toMatch(/^\d+$/);
      let userCount = 0;
      for await (const page of client.userPages({ pageSize: 20 })) userCount += page.items.length;
      expect(userCount).toBe(users.totalCount);

      const hook = await client.subscribeHook({
        resource: 'workflow/tasks',
        channel: 'listsync-test',
        type: 1,
        callbackUrl: 'https://example.com/hook',
      });
      expect(hook.id).toBeTruthy();
    } finally {
      await client.close();
    }
  });

  it('platform refusals become typed errors naming method, path, HTTP status, Status and Message', async () => {
    const client = new PlatformClient({ config: configFor(emu), logger });
    try {
      const notIndexed = await client
        .queryItems('demo', 'orders', { Filters: [where(F.notes).eq('x')], PageSize: 1 })
        .catch((e: unknown) => e);
      expect(notIndexed).toBeInstanceOf(ValidationError);
      expect((notIndexed as Error).message).toMatch(
        /^POST \/lists\/demo\/orders\/items\/query failed: HTTP 200, Status 40001 ".*Text4.*"$/,
      );
      expect(notIndexed).toMatchObject({ retries: 0, status: 40001 });

      await expect(client.getList('demo', 'nope')).rejects.toThrow(NotFoundError);
      expect(client.stats().retries).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('keeps 19-digit IDs sent as JSON numbers exact', async () => {
    const numeric = await startEmulator({ port: 0, sample: true, items: 50, apiKeys: [KEY], idsAsNumbers: true });
    const client = new PlatformClient({ config: configFor(numeric), logger });
    try {
      const raw = await fetch(`${numeric.baseUrl}/lists/demo/orders/items/query`, {
        method: 'POST',
        headers: { apiKey: KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ PageIndex: 1, PageSize: 50 }),
      }).then((r) => r.text());
      expect(raw).toMatch(/"ListDataID":\d{19}/);
      const exported = await numeric.admin.exportList('demo', 'orders');
      const { items } = await client.queryItems('demo', 'orders', { PageIndex: 1, PageSize: 50 });
      expect(items.map((i) => i.ListDataID)).toEqual(exported.items.map((i) => i.ListDataID));
      expect(items.every((i) => typeof i.ListDataID === 'string' && typeof i.RowVersion === 'number')).toBe(true);
    } finally {
      await client.close();
      await numeric.close();
    }
  });

  it('logged at debug level, without the apiKey', () => {
    const text = lines.join('');
    expect(text).toContain('"msg":"platform request"');
    expect(text).toContain('items/query');
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(WRONG_KEY);
  });
});
