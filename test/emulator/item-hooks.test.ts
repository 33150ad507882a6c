/**
 * The emulator's list item events: subscribe (201, ID in Data and Location),
 * unsubscribe, callbacks with the item as the body (bare numeric IDs when the
 * emulator serves them), and the delivery faults of the admin API.
 */
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { parseJson } from '../../src/platform/json.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let emu: RunningEmulator;
let receiver: Server;
let base: string;
const received: Received[] = [];
let refuse = 0;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, sample: true, items: 20, rateLimit: false, idsAsNumbers: true });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (refuse > 0) {
        refuse--;
        res.writeHead(503).end();
        return;
      }
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await emu.close();
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

async function until(cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${emu.baseUrl}${path}`, {
    method,
    headers: { apiKey: emu.apiKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('emulator list item events', () => {
  it('subscribes with 201, answers the ID in Data and Location, refuses bad requests', async () => {
    const r = await api('POST', '/lists/demo/orders/hooks/3?channel=c1', { callbackUrl: `${base}/a`, columnType: 0 });
    expect(r.status).toBe(201);
    const env = (await r.json()) as { Status: number; Data: string };
    expect(env.Status).toBe(0);
    expect(r.headers.get('location')).toBe(`/v1/lists/demo/orders/hooks/${env.Data}`);
    expect(
      ((await (await api('POST', '/lists/demo/orders/hooks/9?channel=c1', { callbackUrl: `${base}/a` })).json()) as { Status: number })
        .Status,
    ).toBe(40000);
    expect(
      ((await (await api('POST', '/lists/demo/orders/hooks/3', { callbackUrl: `${base}/a` })).json()) as { Message: string }).Message,
    ).toContain('channel');
    expect(((await (await api('DELETE', '/lists/demo/orders/hooks/404')).json()) as { Status: number }).Status).toBe(40400);
    expect(((await (await api('DELETE', `/lists/demo/orders/hooks/${env.Data}`)).json()) as { Status: number }).Status).toBe(0);
    expect((await emu.admin.itemHooks()).subscriptions).toHaveLength(0);
  });

  it('sends the item as the body with Channel and Type, for API writes, admin edits and deletes', async () => {
    await api('POST', '/lists/demo/orders/hooks/3?channel=c3', { callbackUrl: `${base}/cm` });
    await api('POST', '/lists/demo/orders/hooks/4?channel=c4', { callbackUrl: `${base}/del` });
    received.length = 0;
    const items = (await emu.admin.exportList('demo', 'orders')).items;
    const id = String(items[0]!.ListDataID);
    await api('PATCH', `/lists/demo/orders/items/${id}`, { RowVersion: 0, Data: { [SAMPLE_FIELDS.status]: 'via api' } });
    await emu.admin.editItem('demo', 'orders', id, { Data: { [SAMPLE_FIELDS.status]: 'via admin' } });
    await emu.admin.deleteItem('demo', 'orders', String(items[1]!.ListDataID));
    await until(() => received.length === 3);
    const bodies = received.map((r) => ({
      channel: r.headers['channel'],
      type: r.headers['type'],
      item: parseJson(r.body) as Record<string, unknown>,
    }));
    const edits = bodies.filter((b) => b.type === '3').sort((a, b) => Number(a.item.RowVersion) - Number(b.item.RowVersion));
    expect(edits.map((b) => [b.channel, b.item.ListDataID, b.item[SAMPLE_FIELDS.status]])).toEqual([
      ['c3', id, 'via api'],
      ['c3', id, 'via admin'],
    ]);
    expect(received[0]!.body).toMatch(/^\{"ListDataID":\d{19},/); // a bare 19-digit number
    const del = bodies.find((b) => b.type === '4')!;
    expect(del.channel).toBe('c4');
    expect(del.item.ListDataID).toBe(String(items[1]!.ListDataID));
  });

  it('delivery faults: duplicates, loss, refused deliveries retried', async () => {
    const id = String((await emu.admin.exportList('demo', 'orders')).items[0]!.ListDataID);
    const before = (await emu.admin.itemHooks()).stats;
    received.length = 0;
    await emu.admin.setItemDelivery({ duplicateRate: 1 });
    await emu.admin.editItem('demo', 'orders', id, { Data: { [SAMPLE_FIELDS.status]: 'twice' } });
    await until(() => received.length === 2);
    expect(received[0]!.body).toBe(received[1]!.body);
    await emu.admin.setItemDelivery({ duplicateRate: null, lossRate: 1 });
    await emu.admin.editItem('demo', 'orders', id, { Data: { [SAMPLE_FIELDS.status]: 'lost' } });
    expect((await emu.admin.itemHooks()).stats.lost).toBe(before.lost + 1);
    await emu.admin.setItemDelivery({ lossRate: null, retryDelayMs: 20 });
    refuse = 2;
    received.length = 0;
    await emu.admin.editItem('demo', 'orders', id, { Data: { [SAMPLE_FIELDS.status]: 'refused twice' } });
    await until(() => received.length === 1);
    const after = (await emu.admin.itemHooks()).stats;
    expect(after.refused - before.refused).toBe(2);
    await expect(emu.admin.setItemDelivery({ lossRate: 2 })).rejects.toThrow(/lossRate/);
  });
});
