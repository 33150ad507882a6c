import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, type Item, QA_SEED, call, query } from './helpers.js';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false });
});
afterAll(async () => {
  await emu.close();
});

async function idOf(title: string): Promise<string> {
  const r = await query(emu, 'qa/things', { Filters: [{ Field: 'Title', Type: 0, Value: title }] });
  expect(r.json.TotalCount).toBe(1);
  return String(r.json.Data[0]!['ListDataID']);
}

describe('GET /v1/lists/{appID}/{listID}/items/{id}', () => {
  it('answers the item with every field, as a query writes it', async () => {
    const id = await idOf('echo');
    const r = await call<Envelope<Item>>(emu, 'GET', `/lists/qa/things/items/${id}`);
    expect([r.status, r.json.Status]).toEqual([200, 0]);
    const fromQuery = (await query(emu, 'qa/things', { Filters: [{ Field: 'ListDataID', Type: 0, Value: id }] })).json.Data[0];
    expect(r.json.Data).toEqual(fromQuery);
    expect(r.json.Data).toMatchObject({ ListDataID: id, RowVersion: 3, Title: 'echo', Num: 'abc' });
  });

  it('an unknown or malformed ID is HTTP 200 with Status 40400; an unknown list too', async () => {
    for (const path of ['/lists/qa/things/items/1234567890123456789', '/lists/qa/things/items/not-an-id', '/lists/qa/nope/items/1']) {
      const r = await call<Envelope>(emu, 'GET', path);
      expect([r.status, r.json.Status], path).toEqual([200, 40400]);
      expect(r.json.Data).toBeNull();
    }
  });

  it('needs the API key, is logged under its route and is rate-limited like every endpoint', async () => {
    const limited = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: { burst: 1, perSecond: 0.001 } });
    try {
      const r1 = await call<Envelope<Item[]>>(limited, 'POST', '/lists/qa/things/items/query', { PageSize: 1 });
      const id = String(r1.json.Data[0]!['ListDataID']);
      const r2 = await call<Envelope>(limited, 'GET', `/lists/qa/things/items/${id}`);
      expect([r2.status, r2.json.Status]).toEqual([429, 42900]);
      const noKey = await call<Envelope>(limited, 'GET', `/lists/qa/things/items/${id}`, undefined, { apiKey: null });
      expect(noKey.status).toBe(401);
      const log = await limited.admin.requests();
      expect(log.filter((e) => e.route === 'GET /v1/lists/{appID}/{listID}/items/{itemID}').map((e) => e.status)).toEqual([429, 401]);
    } finally {
      await limited.close();
    }
  });
});

describe('DELETE /v1/lists/{appID}/{listID}/items/{id}', () => {
  let receiver: Server;
  let callbackUrl: string;
  const bodies: string[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  });
  afterAll(async () => {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it('deletes the item (Data = its ID), which is then gone from queries, reads and the export, and tells subscribers', async () => {
    await call(emu, 'POST', '/hooks', { Resource: 'workflow/tasks', Channel: 'c1', Type: 1, Settings: { callbackUrl } });
    const id = await idOf('foxtrot');
    const before = (await emu.admin.exportList('qa', 'things')).count;
    const r = await call<Envelope<string>>(emu, 'DELETE', `/lists/qa/things/items/${id}`);
    expect([r.status, r.json.Status, r.json.Data]).toEqual([200, 0, id]);

    const read = await call<Envelope>(emu, 'GET', `/lists/qa/things/items/${id}`);
    expect(read.json.Status).toBe(40400);
    const q = await query(emu, 'qa/things', { Filters: [{ Field: 'Title', Type: 0, Value: 'foxtrot' }] });
    expect(q.json.TotalCount).toBe(0);
    const exported = await emu.admin.exportList('qa', 'things');
    expect(exported.count).toBe(before - 1);
    expect(exported.items.some((i) => i['ListDataID'] === id)).toBe(false);

    const deliveries = (await emu.admin.hooks()).deliveries;
    const event = JSON.parse(deliveries.at(-1)!.body) as Record<string, unknown>;
    expect(event).toMatchObject({ Event: 'TaskCancelled', ListDataID: id });
  });

  it('deleting it again, or an unknown item, is HTTP 200 with Status 40400 and changes nothing', async () => {
    const count = (await emu.admin.exportList('qa', 'things')).count;
    const r = await call<Envelope>(emu, 'DELETE', '/lists/qa/things/items/1234567890123456789');
    expect([r.status, r.json.Status]).toEqual([200, 40400]);
    expect(r.json.Message).toMatch(/not found/);
    expect((await emu.admin.exportList('qa', 'things')).count).toBe(count);
    const log = await emu.admin.requests();
    expect(log.at(-1)).toMatchObject({
      method: 'DELETE',
      route: 'DELETE /v1/lists/{appID}/{listID}/items/{itemID}',
      status: 200,
      envelopeStatus: 40400,
    });
  });
});

describe('GET /healthz', () => {
  it('answers 200 {"status":"ok"} without an API key', async () => {
    const res = await fetch(`${emu.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});
