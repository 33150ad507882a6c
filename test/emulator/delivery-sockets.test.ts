/**
 * How the emulator opens callback connections (src/emulator/delivery-sockets.ts): a bulk edit's
 * thousands of item events go out on at most `sockets` kept-alive connections, and the bulk edit
 * answers without waiting for them; `sockets: 0` keeps the old form, one connection per delivery.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

const ITEMS = 2000;

let emu: RunningEmulator | undefined;
let receiver: Server | undefined;

afterEach(async () => {
  await emu?.close();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  emu = receiver = undefined;
});

/** A callback receiver counting the connections it holds; `answer` decides when each request is answered. */
async function startReceiver(answer: (res: ServerResponse) => void): Promise<{ url: string; peak: () => number; requests: () => number }> {
  let open = 0;
  let peak = 0;
  let requests = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    req.resume();
    req.on('end', () => answer(res));
  });
  server.on('connection', (s: Socket) => {
    peak = Math.max(peak, ++open);
    s.once('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  receiver = server;
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`, peak: () => peak, requests: () => requests };
}

async function subscribe(e: RunningEmulator, callbackUrl: string): Promise<void> {
  const r = await fetch(`${e.baseUrl}/lists/demo/orders/hooks/3?channel=c1`, {
    method: 'POST',
    headers: { apiKey: e.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ callbackUrl }),
  });
  expect(r.status).toBe(201);
}

async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('emulator callback connections', () => {
  it(`a bulk edit of ${ITEMS} items answers at once while no callback is answered, and at most 64 connections are opened`, async () => {
    const held: ServerResponse[] = [];
    const rec = await startReceiver((res) => held.push(res));
    emu = await startEmulator({ port: 0, sample: true, items: ITEMS, rateLimit: false });
    await subscribe(emu, rec.url);
    const t = performance.now();
    expect(await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk' } })).toBe(ITEMS);
    expect(performance.now() - t).toBeLessThan(5000);
    await until(() => rec.requests() >= 64, 5000);
    await new Promise((r) => setTimeout(r, 500));
    // Every socket busy with an unanswered delivery: the rest wait in the emulator, not on new connections.
    expect(rec.peak()).toBe(64);
    expect(rec.requests()).toBe(64);
    const { stats } = await emu.admin.itemHooks();
    expect(stats.peakSockets).toBe(64);
    expect(stats.refused).toBe(0);
    for (const res of held.splice(0)) res.writeHead(503).end();
  });

  it('every delivery reaches a receiver that answers, on kept-alive sockets (far fewer connections than deliveries)', async () => {
    const rec = await startReceiver((res) => res.writeHead(200).end('ok'));
    emu = await startEmulator({ port: 0, sample: true, items: ITEMS, rateLimit: false });
    await emu.admin.setItemDelivery({ sockets: 16 });
    await subscribe(emu, rec.url);
    await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk' } });
    await until(async () => (await emu!.admin.itemHooks()).stats.pending === 0, 60_000);
    const { stats } = await emu.admin.itemHooks();
    expect(stats).toMatchObject({ events: ITEMS, delivered: ITEMS, refused: 0, abandoned: 0 });
    expect(stats.peakSockets).toBeLessThanOrEqual(16);
    expect(rec.peak()).toBeLessThanOrEqual(16);
    expect(rec.requests()).toBe(ITEMS);
  });

  it('sockets: 0, the unbounded form: one new connection per delivery, all opened at once', async () => {
    const held: ServerResponse[] = [];
    const rec = await startReceiver((res) => held.push(res));
    emu = await startEmulator({ port: 0, sample: true, items: 300, rateLimit: false });
    await emu.admin.setItemDelivery({ sockets: 0 });
    await subscribe(emu, rec.url);
    await emu.admin.bulkEdit('demo', 'orders', { Data: { Text4: 'bulk' } });
    await until(() => rec.requests() === 300, 10_000);
    expect(rec.peak()).toBe(300);
    for (const res of held.splice(0)) res.writeHead(200).end();
  });
});
