import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, QA_SEED, call, query } from './helpers.js';

let emu: RunningEmulator;
let now = new Date('2026-03-10T09:15:30Z');

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false, now: () => now });
});
afterAll(async () => {
  await emu.close();
});

async function getItem(id: string): Promise<Record<string, string | number>> {
  const r = await query(emu, 'qa/things', { Filters: [{ Field: 'ListDataID', Type: 0, Value: id }] });
  expect(r.json.TotalCount).toBe(1);
  return r.json.Data[0]!;
}

async function apiUserId(): Promise<string> {
  const r = await call<Envelope<Array<{ UserID: string }>>>(emu, 'POST', '/users/search', { PageIndex: 1, PageSize: 1 });
  return r.json.Data[0]!.UserID;
}

describe('create', () => {
  it('returns the new ID as a 19-digit string; the item is readable after', async () => {
    const r = await call<Envelope<string>>(emu, 'POST', '/lists/qa/things/items', {
      Data: { Title: 'new one', Text1: 'hello', Num: '42', Tags: '["a","c"]' },
    });
    expect(r.status).toBe(200);
    expect(r.json.Status).toBe(0);
    expect(r.json.Data).toMatch(/^\d{19}$/);
    const item = await getItem(r.json.Data);
    expect(item).toMatchObject({
      ListDataID: r.json.Data,
      RowVersion: 1,
      Title: 'new one',
      Text1: 'hello',
      Num: '42',
      Tags: '["a","c"]',
      Price: '',
      Created: '2026-03-10 09:15:30',
      Modified: '2026-03-10 09:15:30',
    });
    const me = await apiUserId();
    expect(item['CreatedBy']).toBe(me);
    expect(item['ModifiedBy']).toBe(me);
    const exported = await emu.admin.exportList('qa', 'things');
    expect(exported.items.at(-1)!['ListDataID']).toBe(r.json.Data);
  });

  it('stores values that do not fit the field type as given', async () => {
    const r = await call<Envelope<string>>(emu, 'POST', '/lists/qa/things/items', { Data: { Num: 'abc', Day: 'someday', Flag: 'yes' } });
    expect(r.json.Status).toBe(0);
    expect(await getItem(r.json.Data)).toMatchObject({ Num: 'abc', Day: 'someday', Flag: 'yes' });
  });

  it('rejects non-string values, unknown fields and system fields with 40000 naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ Num: 5 }, 'Num'],
      [{ Tags: ['a'] }, 'Tags'],
      [{ Nope: 'x' }, 'Nope'],
      [{ Created: '2026-01-01 00:00:00' }, 'Created'],
      [{ RowVersion: '3' }, 'RowVersion'],
    ];
    for (const [Data, field] of cases) {
      const r = await call<Envelope>(emu, 'POST', '/lists/qa/things/items', { Data });
      expect(r.status).toBe(200);
      expect(r.json.Status, JSON.stringify(Data)).toBe(40000);
      expect(r.json.Message).toContain(field);
    }
    const noData = await call<Envelope>(emu, 'POST', '/lists/qa/things/items', { Data: 'x' });
    expect(noData.json.Status).toBe(40000);
  });
});

describe('update (PATCH) with RowVersion', () => {
  it('a matching RowVersion applies the change, bumps the version and sets Modified/ModifiedBy', async () => {
    const created = await call<Envelope<string>>(emu, 'POST', '/lists/qa/things/items', { Data: { Title: 'versioned', Color: 'red' } });
    const id = created.json.Data;
    now = new Date('2026-03-10T10:00:00Z');
    const r = await call<Envelope<string>>(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 1, Data: { Color: 'blue' } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ Status: 0, Data: id, Message: '' });
    expect(await getItem(id)).toMatchObject({
      RowVersion: 2,
      Color: 'blue',
      Title: 'versioned',
      Modified: '2026-03-10 10:00:00',
      Created: '2026-03-10 09:15:30',
    });

    const stale = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 1, Data: { Color: 'green' } });
    expect(stale.status).toBe(200);
    expect(stale.json.Status).toBe(40900);
    expect(stale.json.Message).toBe('RowVersion mismatch');
    expect(await getItem(id)).toMatchObject({ RowVersion: 2, Color: 'blue' });

    const forced = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 0, Data: { Color: 'green' } });
    expect(forced.json.Status).toBe(0);
    expect(await getItem(id)).toMatchObject({ RowVersion: 3, Color: 'green' });
  });

  it('changes by another user show up as a new version with their ModifiedBy', async () => {
    const created = await call<Envelope<string>>(emu, 'POST', '/lists/qa/things/items', { Data: { Title: 'shared' } });
    const id = created.json.Data;
    const v = await emu.admin.editItem('qa', 'things', id, { Data: { Notes: 'edited elsewhere' } });
    expect(v).toBe(2);
    const item = await getItem(id);
    expect(item['ModifiedBy']).not.toBe(await apiUserId());
    const stale = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 1, Data: { Notes: 'mine' } });
    expect(stale.json.Status).toBe(40900);
  });

  it('validates RowVersion and Data', async () => {
    const id = String((await emu.admin.exportList('qa', 'things')).items[0]!['ListDataID']);
    for (const body of [{ Data: {} }, { RowVersion: '1', Data: {} }, { RowVersion: -1, Data: {} }]) {
      const r = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${id}`, body);
      expect(r.json.Status).toBe(40000);
      expect(r.json.Message).toContain('RowVersion');
    }
    const r = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 0, Data: { Price: 1.5 } });
    expect(r.json.Status).toBe(40000);
    expect(r.json.Message).toContain('Price');
  });

  it('an unknown item is Status 40400', async () => {
    const r = await call<Envelope>(emu, 'PATCH', '/lists/qa/things/items/1999999999999999999', { RowVersion: 0, Data: { Color: 'x' } });
    expect(r.json.Status).toBe(40400);
  });
});
