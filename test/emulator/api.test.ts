import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, SAMPLE_FIELDS as F, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, type Item, QA_SEED, call, query } from './helpers.js';

const isAttachmentList = (v: unknown): boolean =>
  Array.isArray(v) &&
  v.length > 0 &&
  v.every(
    (a: Record<string, unknown>) => typeof a['id'] === 'string' && typeof a['name'] === 'string' && typeof a['fileSize'] === 'number',
  );

let emu: RunningEmulator;
let sample: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false });
  sample = await startEmulator({ port: 0, items: 300, rateLimit: false });
});
afterAll(async () => {
  await Promise.all([emu.close(), sample.close()]);
});

describe('envelope', () => {
  it('wraps every answer in {Status, Data, Message}; collections add TotalCount', async () => {
    const list = await call(emu, 'GET', '/lists/qa/things');
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toMatch(/application\/json/);
    expect(Object.keys(list.json as object)).toEqual(['Status', 'Data', 'Message']);
    expect(list.json).toMatchObject({ Status: 0, Message: '', Data: { AppID: 'qa', ListID: 'things', Title: 'Things' } });
    const q = await query(emu, 'qa/things', {});
    expect(Object.keys(q.json)).toEqual(['Status', 'Data', 'Message', 'TotalCount']);
    expect(Array.isArray(q.json.Data)).toBe(true);
  });

  it('list details carry AppID, ListID, Title, Description, Created, Modified, CreatedBy, ModifiedBy', async () => {
    const r = await call<Envelope<Record<string, unknown>>>(sample, 'GET', '/lists/demo/orders');
    for (const k of ['AppID', 'ListID', 'Title', 'Description', 'Created', 'Modified', 'CreatedBy', 'ModifiedBy'])
      expect(r.json.Data).toHaveProperty(k);
    expect(r.json.Data['Title']).toBe('Orders');
    expect(r.json.Data['Created']).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('an unknown path is HTTP 404; an unknown list or item is 200 with Status 40400', async () => {
    expect((await call(emu, 'GET', '/nope')).status).toBe(404);
    expect((await call(emu, 'DELETE', '/lists/qa/things')).status).toBe(404);
    const list = await call(emu, 'GET', '/lists/qa/missing');
    expect([list.status, (list.json as Envelope).Status]).toEqual([200, 40400]);
    const q = await query(emu, 'qa/missing', {});
    expect(q.json.Status).toBe(40400);
    const patch = await call(emu, 'PATCH', '/lists/qa/things/items/1234567890123456789', { RowVersion: 0, Data: {} });
    expect([patch.status, (patch.json as Envelope).Status]).toEqual([200, 40400]);
  });

  it('a body that is not JSON answers 200 with Status 40000', async () => {
    const r = await call<Envelope>(emu, 'POST', '/lists/qa/things/items/query', undefined, { rawBody: '{"PageSize": ' });
    expect(r.status).toBe(200);
    expect(r.json.Status).toBe(40000);
    expect(r.json.Message).toMatch(/JSON/);
  });
});

describe('authentication', () => {
  it('a missing key is HTTP 401 with Status 40100', async () => {
    const r = await call<Envelope>(emu, 'GET', '/lists/qa/things', undefined, { apiKey: null });
    expect(r.status).toBe(401);
    expect(r.json.Status).toBe(40100);
    expect(r.json.Message).toMatch(/apiKey/);
  });

  it('a wrong key is HTTP 401 with Status 40100', async () => {
    const r = await call<Envelope>(emu, 'POST', '/lists/qa/things/items/query', {}, { apiKey: 'wrong' });
    expect([r.status, r.json.Status]).toEqual([401, 40100]);
  });

  it('the key may be sent as the apiKey query parameter; every configured key works', async () => {
    const res = await fetch(`${emu.baseUrl}/lists/qa/things?apiKey=qa-key-2`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Envelope).Status).toBe(0);
  });
});

describe('fields metadata', () => {
  it('describes system and user fields with FieldType (storage) and Type (control)', async () => {
    const r = await call<Envelope<Array<Record<string, unknown>>>>(sample, 'GET', '/lists/demo/orders/fields');
    expect(r.json.Status).toBe(0);
    const byName = new Map(r.json.Data.map((f) => [f['FieldName'], f]));
    for (const f of r.json.Data) {
      expect(Object.keys(f)).toEqual([
        'FieldID',
        'FieldName',
        'DisplayName',
        'InternalName',
        'Type',
        'FieldType',
        'DefaultValue',
        'Rules',
        'IsSort',
        'IsIndex',
        'IsSystem',
        'IsUnique',
      ]);
    }
    expect(byName.get('ListDataID')).toMatchObject({ FieldType: 'Bigint', Type: 'id', IsSystem: true, IsIndex: true });
    expect(byName.get('RowVersion')).toMatchObject({ FieldType: 'Bigint', Type: 'version', IsSystem: true, IsIndex: false });
    expect(byName.get('Title')).toMatchObject({ FieldType: 'Text', Type: 'input', IsSystem: true, IsIndex: true });
    expect(byName.get('Created')).toMatchObject({
      FieldType: 'Datetime',
      Type: 'datepicker',
      IsIndex: true,
      Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' },
    });
    expect(byName.get('CreatedBy')).toMatchObject({ FieldType: 'Text', Type: 'lookup', IsSystem: true });
    expect(byName.get('Datetime1')).toMatchObject({ FieldType: 'Datetime', Rules: { DateFormat: 'yyyy-MM-dd' }, IsSystem: false });
    expect(byName.get('Datetime2')).toMatchObject({ Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } });
    expect(byName.get('Text5')).toMatchObject({ FieldType: 'Text', Type: 'checkbox' });
    expect(byName.get('Bit1')).toMatchObject({ FieldType: 'Bit', Type: 'switch' });
    expect(byName.get('Decimal1')).toMatchObject({ FieldType: 'Decimal', Type: 'input_number' });
    expect(byName.get('Text3')).toMatchObject({ IsIndex: true });
    expect(byName.get('Text2')).toMatchObject({ IsIndex: false });
    expect(byName.get('File1')).toMatchObject({ DisplayName: 'Attachment', FieldType: 'File', Type: 'file-upload' });
    expect(r.json.Data.filter((f) => f['IsSystem'] === false).map((f) => [f['FieldName'], f['DisplayName']])).toEqual([
      ['Text1', 'Order No.'],
      ['Text2', 'Customer'],
      ['Text3', 'Status'],
      ['Text4', 'Notes'],
      ['Bigint1', 'Quantity'],
      ['Decimal1', 'Amount'],
      ['Datetime1', 'Order date'],
      ['Datetime2', 'Shipped at'],
      ['Bit1', 'Paid'],
      ['Text5', 'Tags'],
      ['Text6', 'Owner'],
      ['Text7', 'Website'],
      ['File1', 'Attachment'],
    ]);
  });
});

describe('the built-in sample', () => {
  it('has demo/orders with platform-formatted string values', async () => {
    const r = await query(sample, 'demo/orders', { PageSize: 1000 });
    expect(r.json.TotalCount).toBe(300);
    const items = r.json.Data;
    const statuses = new Set(items.map((i) => i[F.status]));
    expect([...statuses].every((s) => ['New', 'Paid', 'Shipped', 'Cancelled'].includes(String(s)))).toBe(true);
    const problems: string[] = [];
    const check = (ok: boolean, what: string, i: Item): void => {
      if (!ok) problems.push(`${what}: ${JSON.stringify(i)}`);
    };
    const dateTime = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
    for (const i of items) {
      check(/^SO-\d{6}$/.test(String(i[F.orderNo])), 'Order No.', i);
      check(/^\d{4}-\d{2}-\d{2}$/.test(String(i[F.orderDate])), 'Order date', i);
      check(i[F.status] === 'Shipped' ? dateTime.test(String(i[F.shippedAt])) : i[F.shippedAt] === '', 'Shipped at', i);
      check(i[F.paid] === '0' || i[F.paid] === '1', 'Paid', i);
      check(/^\d+\.\d{2}$/.test(String(i[F.amount])), 'Amount', i);
      check(/^\d+$/.test(String(i[F.quantity])), 'Quantity', i);
      check(i[F.tags] === '' || Array.isArray(JSON.parse(String(i[F.tags]))), 'Tags', i);
      check(/^\d{19}$/.test(String(i[F.owner])), 'Owner', i);
      check(i[F.attachment] === '' || isAttachmentList(JSON.parse(String(i[F.attachment]))), 'Attachment', i);
      check(String(i['Modified']) >= String(i['Created']), 'Modified >= Created', i);
      check(/^\d{19}$/.test(String(i['ListDataID'])), 'ListDataID', i);
    }
    expect(problems.slice(0, 3)).toEqual([]);
    expect(items.some((i) => i[F.notes] === '')).toBe(true);
    expect(items.some((i) => i[F.notes] !== '')).toBe(true);
    const withFiles = items.filter((i) => i[F.attachment] !== '').length;
    expect(withFiles).toBeGreaterThan(0);
    expect(withFiles).toBeLessThan(items.length);
  });

  it('IDs grow with Created', async () => {
    const r = await query(sample, 'demo/orders', { PageSize: 1000, Sorts: [{ Field: 'Created' }] });
    const ids = r.json.Data.map((i: Item) => BigInt(String(i['ListDataID'])));
    for (let k = 1; k < ids.length; k++) expect(ids[k]! > ids[k - 1]!).toBe(true);
  });

  it('searches the users directory with paging', async () => {
    const all = await call<Envelope<Array<Record<string, string>>>>(sample, 'POST', '/users/search', { PageIndex: 1, PageSize: 1000 });
    expect(all.json.TotalCount).toBe(50);
    const u = all.json.Data[3]!;
    expect(Object.keys(u)).toEqual(['UserID', 'Name', 'Email', 'Account', 'Photo', 'LineManager']);
    expect(u['UserID']).toMatch(/^\d{19}$/);
    const page = await call<Envelope<unknown[]>>(sample, 'POST', '/users/search', { PageIndex: 2, PageSize: 20 });
    expect(page.json.Data.length).toBe(20);
    const hit = await call<Envelope<Array<Record<string, string>>>>(sample, 'POST', '/users/search', {
      PageIndex: 1,
      PageSize: 20,
      SearchKey: u['Name'],
    });
    expect(hit.json.Data.map((x) => x['UserID'])).toContain(u['UserID']);
    const tooBig = await call<Envelope>(sample, 'POST', '/users/search', { PageIndex: 1, PageSize: 1001 });
    expect(tooBig.json.Status).toBe(40000);
  });
});

describe('listDataID precision', () => {
  it('IDs are 19-digit strings beyond 2^53', async () => {
    const r = await query(sample, 'demo/orders', { PageSize: 50 });
    for (const i of r.json.Data) {
      expect(typeof i['ListDataID']).toBe('string');
      expect(BigInt(String(i['ListDataID'])) > 2n ** 53n).toBe(true);
    }
  });

  it('with idsAsNumbers the body carries the exact digits as a bare number', async () => {
    const numeric = await startEmulator({ port: 0, items: 20, rateLimit: false, idsAsNumbers: true });
    try {
      const r = await query(numeric, 'demo/orders', { Fields: ['Title'], PageSize: 5 });
      const exported = await numeric.admin.exportList('demo', 'orders');
      const firstId = String(exported.items[0]!['ListDataID']);
      expect(r.text).toContain(`{"ListDataID":${firstId},"RowVersion":`);
      // A naive JSON.parse loses digits: exactly what clients must avoid.
      const parsed = r.json.Data[0]!['ListDataID'];
      expect(typeof parsed).toBe('number');
      expect(BigInt(parsed as number).toString()).not.toBe(firstId);
    } finally {
      await numeric.close();
    }
  });
});
