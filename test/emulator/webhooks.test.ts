import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, QA_SEED, call } from './helpers.js';

interface Received {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let emu: RunningEmulator;
let receiver: Server;
let callbackUrl: string;
const received: Received[] = [];

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/tasks`;
});
afterAll(async () => {
  await emu.close();
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('webhooks', () => {
  it('validates the subscription request', async () => {
    const bad: unknown[] = [
      { Resource: 'workflow/tasks', Channel: '', Type: 1, Settings: { callbackUrl } },
      { Resource: 'workflow/tasks', Channel: 'c', Type: '1', Settings: { callbackUrl } },
      { Resource: 'workflow/tasks', Channel: 'c', Type: 1, Settings: { callbackUrl: 'not a url' } },
      { Resource: 7, Channel: 'c', Type: 1, Settings: { callbackUrl } },
    ];
    for (const body of bad) {
      const r = await call<Envelope>(emu, 'POST', '/hooks', body);
      expect(r.status).toBe(200);
      expect(r.json.Status, JSON.stringify(body)).toBe(40000);
    }
  });

  it('subscribes, and delivers a fired event with Channel and Type headers', async () => {
    const r = await call<Envelope<{ Id: string }>>(emu, 'POST', '/hooks', {
      Resource: 'workflow/tasks',
      Channel: 'listsync-test',
      Type: 3,
      Settings: { callbackUrl },
    });
    expect(r.json.Status).toBe(0);
    expect(typeof r.json.Data.Id).toBe('string');

    const deliveries = await emu.admin.fireHook({ event: { ListDataID: '1234567890123456789', Event: 'TaskCompleted' } });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ subscriptionId: r.json.Data.Id, statusCode: 200, error: null });
    expect(received).toHaveLength(1);
    const got = received[0]!;
    expect(got.method).toBe('POST');
    expect(got.headers['channel']).toBe('listsync-test');
    expect(got.headers['type']).toBe('3');
    expect(got.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got.body) as Record<string, unknown>;
    expect(body).toMatchObject({ ListDataID: '1234567890123456789', Event: 'TaskCompleted' });
    for (const k of ['TaskID', 'WorkflowID', 'Assignee', 'Created']) expect(typeof body[k]).toBe('string');
    expect(body['Created']).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

    const hooks = await emu.admin.hooks();
    expect(hooks.subscriptions[0]).toMatchObject({ Id: r.json.Data.Id, Channel: 'listsync-test', Type: 3, Settings: { callbackUrl } });
    expect(hooks.deliveries).toHaveLength(1);
  });

  it('redelivers a delivery exactly (same body and headers)', async () => {
    const before = received.length;
    const d = await emu.admin.redeliver(0);
    expect(d).toMatchObject({ redeliveryOf: 0, statusCode: 200 });
    expect(received).toHaveLength(before + 1);
    const [a, b] = [received[0]!, received[before]!];
    expect(b.body).toBe(a.body);
    expect([b.headers['channel'], b.headers['type']]).toEqual([a.headers['channel'], a.headers['type']]);
  });

  it('records failed deliveries', async () => {
    const dead = await call<Envelope<{ Id: string }>>(emu, 'POST', '/hooks', {
      Resource: 'workflow/tasks',
      Channel: 'dead',
      Type: 1,
      Settings: { callbackUrl: 'http://127.0.0.1:1/nowhere' },
    });
    const [d] = await emu.admin.fireHook({ subscriptionId: dead.json.Data.Id });
    expect(d).toMatchObject({ statusCode: null });
    expect(d!.error).toBeTruthy();
    await expect(emu.admin.fireHook({ subscriptionId: 'hook-404' })).rejects.toThrow(/hook-404/);
  });
});

describe('simulated activity', () => {
  it('edits, creates and deletes items as another user and fires task events', async () => {
    const before = await emu.admin.exportList('qa', 'many');
    const hooksBefore = received.length;
    await emu.admin.setActivity({
      appID: 'qa',
      listID: 'many',
      editsPerSecond: 60,
      createsPerSecond: 30,
      deletesPerSecond: 30,
      hookEvents: true,
    });
    await waitFor(() => received.length >= hooksBefore + 3);
    let state = await emu.admin.activity();
    while (state.totals.edits < 2 || state.totals.creates < 1 || state.totals.deletes < 1) {
      await new Promise((r) => setTimeout(r, 20));
      state = await emu.admin.activity();
    }
    const stopped = await emu.admin.setActivity(null);
    expect(stopped.settings).toBeNull();
    const after = await emu.admin.exportList('qa', 'many');
    const { edits, creates, deletes } = stopped.totals;
    expect(after.count).toBe(before.count + creates - deletes);
    const beforeIds = new Set(before.items.map((i) => i['ListDataID']));
    const createdItems = after.items.filter((i) => !beforeIds.has(i['ListDataID']));
    expect(createdItems.length).toBeGreaterThanOrEqual(1);
    const users = await call<Envelope<Array<{ UserID: string }>>>(emu, 'POST', '/users/search', { PageIndex: 1, PageSize: 2 });
    const otherUser = users.json.Data[1]!.UserID;
    for (const i of createdItems) expect(i['CreatedBy']).toBe(otherUser);
    const bumped = after.items.filter((i) => {
      const old = before.items.find((o) => o['ListDataID'] === i['ListDataID']);
      return old !== undefined && Number(i['RowVersion']) > Number(old['RowVersion']);
    });
    expect(bumped.length).toBeGreaterThanOrEqual(1);
    for (const i of bumped) expect(i['ModifiedBy']).toBe(otherUser);
    expect(bumped.length).toBeLessThanOrEqual(edits);
    const events = received.slice(hooksBefore).map((r) => JSON.parse(r.body) as { Event: string; ListDataID: string });
    expect(events.every((e) => /^\d{19}$/.test(e.ListDataID))).toBe(true);
    expect(new Set(events.map((e) => e.Event)).size).toBeGreaterThanOrEqual(1);
  });

  it('rejects activity for an unknown list', async () => {
    await expect(emu.admin.setActivity({ appID: 'qa', listID: 'nope', editsPerSecond: 1 })).rejects.toThrow(/qa\/nope/);
  });
});
