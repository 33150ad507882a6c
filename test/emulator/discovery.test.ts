/** GET /applications and GET /applications/{id}/lists, served from the seed. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, type SeedFile, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, call } from './helpers.js';

const fields = [{ FieldName: 'Amount', Type: 'input_number', FieldType: 'Decimal' }];
const SEED: SeedFile = {
  apiKeys: ['disc-key'],
  lists: [
    { appID: 'sales', listID: 'orders', title: 'Orders', description: 'Customer orders', fields, items: [] },
    { appID: 'sales', listID: 'refunds', title: 'Refunds', fields, items: [] },
    { appID: 'hr', listID: 'leave', title: 'Leave requests', fields, items: [] },
  ],
};

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: SEED, rateLimit: false });
});
afterAll(async () => {
  await emu.close();
});

describe('discovery', () => {
  it('lists one application per appID of the seed', async () => {
    const r = await call<Envelope<{ AppID: string; Title: string }[]>>(emu, 'GET', '/applications');
    expect(r.status).toBe(200);
    expect(r.json.Status).toBe(0);
    expect(r.json.Data.map((a) => a.AppID).sort()).toEqual(['hr', 'sales']);
    expect(r.json.TotalCount).toBe(2);
  });

  it("lists an application's lists with AppID, ListID, Title and Description", async () => {
    const r = await call<Envelope<Record<string, string>[]>>(emu, 'GET', '/applications/sales/lists');
    expect(r.json.Status).toBe(0);
    expect(r.json.Data).toEqual([
      { AppID: 'sales', ListID: 'orders', Title: 'Orders', Description: 'Customer orders' },
      { AppID: 'sales', ListID: 'refunds', Title: 'Refunds', Description: '' },
    ]);
  });

  it('an unknown application is Status 40400; both need the apiKey', async () => {
    const r = await call<Envelope>(emu, 'GET', '/applications/nope/lists');
    expect([r.status, r.json.Status]).toEqual([200, 40400]);
    expect((await call<Envelope>(emu, 'GET', '/applications', undefined, { apiKey: null })).status).toBe(401);
  });
});
