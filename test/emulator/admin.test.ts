import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, type Item, QA_SEED, call, query } from './helpers.js';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, sample: true, items: 200, rateLimit: false, timeZone: 'Europe/Berlin' });
});
afterAll(async () => {
  await emu.close();
});

async function allItems(list: string): Promise<Item[]> {
  const r = await query(emu, list, { PageSize: 1000 });
  return r.json.Data;
}

describe('admin API', () => {
  it('export returns every current item with every field, sorted by ListDataID, equal to what the API serves', async () => {
    const exported = await emu.admin.exportList('demo', 'orders');
    expect(exported.count).toBe(200);
    expect(exported.fields.map((f) => f.FieldName)).toContain('Text1');
    expect(exported.items).toEqual(await allItems('demo/orders'));
    const ids = exported.items.map((i) => BigInt(String(i['ListDataID'])));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
  });

  it('edits as another user bump RowVersion and Modified; deletes leave no trace', async () => {
    const [first, second] = (await emu.admin.exportList('qa', 'things')).items as [Item, Item];
    const id = String(first['ListDataID']);
    const v = await emu.admin.editItem('qa', 'things', id, { Data: { Color: 'purple' }, Modified: '2026-02-01 10:00:00' });
    expect(v).toBe(Number(first['RowVersion']) + 1);
    const edited = await emu.admin.getItem('qa', 'things', id);
    expect(edited).toMatchObject({ Color: 'purple', Modified: '2026-02-01 10:00:00', RowVersion: v });
    expect(edited['ModifiedBy']).not.toBe(first['CreatedBy']);

    const gone = String(second['ListDataID']);
    await emu.admin.deleteItem('qa', 'things', gone);
    const after = await emu.admin.exportList('qa', 'things');
    expect(after.items.map((i) => i['ListDataID'])).not.toContain(gone);
    const q = await query(emu, 'qa/things', { Filters: [{ Field: 'ListDataID', Type: 0, Value: gone }] });
    expect(q.json.TotalCount).toBe(0);
    const patch = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${gone}`, { RowVersion: 0, Data: { Color: 'x' } });
    expect(patch.json.Status).toBe(40400);
    await expect(emu.admin.deleteItem('qa', 'things', gone)).rejects.toThrow(/not found/);
  });

  it('creates items as another user, with a given Created', async () => {
    const id = await emu.admin.createItem('qa', 'things', { Data: { Title: 'from admin' }, Created: '2025-06-01T12:00:00Z' });
    const item = await emu.admin.getItem('qa', 'things', id);
    // 12:00 UTC is 14:00 in Berlin (summer time).
    expect(item).toMatchObject({ Title: 'from admin', Created: '2025-06-01 14:00:00', RowVersion: 1 });
    await expect(emu.admin.createItem('qa', 'things', { Data: { Nope: 'x' } })).rejects.toThrow(/Nope/);
  });

  it('adds a field at run time: metadata and items show it', async () => {
    const meta = await emu.admin.addField('qa', 'things', {
      FieldName: 'Region',
      FieldType: 'Text',
      Type: 'radio',
      IsIndex: true,
      DefaultValue: 'EU',
    });
    expect(meta).toMatchObject({ FieldName: 'Region', IsIndex: true, IsSystem: false });
    const fields = await call<Envelope<Array<{ FieldName: string }>>>(emu, 'GET', '/lists/qa/things/fields');
    expect(fields.json.Data.map((f) => f.FieldName)).toContain('Region');
    const items = await allItems('qa/things');
    expect(items.every((i) => i['Region'] === 'EU')).toBe(true);
    const q = await query(emu, 'qa/things', { Filters: [{ Field: 'Region', Type: 0, Value: 'EU' }] });
    expect(q.json.TotalCount).toBe(items.length);
    await expect(emu.admin.addField('qa', 'things', { FieldName: 'Region', FieldType: 'Text', Type: 'input' })).rejects.toThrow(
      /already exists/,
    );
    await expect(emu.admin.addField('qa', 'things', { FieldName: 'Bad', FieldType: 'Text', Type: 'spinner' })).rejects.toThrow(/FieldType/);
  });

  it("changes a field's kind: the same FieldID, every item keeps its value and version; the new kind's values are taken", async () => {
    const fieldsOf = async () => (await call<Envelope<Array<Record<string, unknown>>>>(emu, 'GET', '/lists/qa/things/fields')).json.Data;
    const before = (await fieldsOf()).find((f) => f['FieldName'] === 'Num')!;
    const items = await allItems('qa/things');
    const meta = await emu.admin.changeFieldKind('qa', 'things', 'Num', { FieldType: 'Text', Type: 'input' });
    expect(meta).toMatchObject({ FieldName: 'Num', FieldID: before['FieldID'], FieldType: 'Text', Type: 'input' });
    expect((await fieldsOf()).find((f) => f['FieldName'] === 'Num')).toMatchObject({ FieldID: before['FieldID'], FieldType: 'Text' });
    const after = await allItems('qa/things');
    expect(after.map((i) => [i['Num'], i['RowVersion']])).toEqual(items.map((i) => [i['Num'], i['RowVersion']]));
    const id = String(items[0]!['ListDataID']);
    await emu.admin.editItem('qa', 'things', id, { Data: { Num: 'twelve' } });
    expect((await emu.admin.getItem('qa', 'things', id))['Num']).toBe('twelve');
    await expect(emu.admin.changeFieldKind('qa', 'things', 'Num', {})).rejects.toThrow(/FieldType, Type or both/);
    await expect(emu.admin.changeFieldKind('qa', 'things', 'Nope', { FieldType: 'Text' })).rejects.toThrow(/no user-defined field/);
  });

  it('a pinned clock sets Created/Modified of new changes in the platform zone (midnight crossing)', async () => {
    const clock = await emu.admin.setClock('2026-03-28T23:30:00Z');
    expect(clock).toMatchObject({ pinned: true, platformNow: '2026-03-29 00:30:00', timeZone: 'Europe/Berlin' });
    const created = await call<Envelope<string>>(emu, 'POST', '/lists/qa/things/items', { Data: { Title: 'late night' } });
    const item = await emu.admin.getItem('qa', 'things', created.json.Data);
    expect(item['Created']).toBe('2026-03-29 00:30:00');
    const sameDay = await query(emu, 'qa/things', { Filters: [{ Field: 'Created', Type: 0, Value: '2026-03-29' }] });
    expect(sameDay.json.Data.map((i) => i['Title'])).toEqual(['late night']);
    const unpinned = await emu.admin.setClock(null);
    expect(unpinned.pinned).toBe(false);
  });

  it('logs requests without the API key value; stats count them', async () => {
    await emu.admin.clearRequests();
    await call(emu, 'GET', '/lists/qa/things');
    await fetch(`${emu.baseUrl}/lists/qa/things?apiKey=${emu.apiKey}`);
    await query(emu, 'qa/things', { PageIndex: 1, PageSize: 3 });
    await call(emu, 'GET', '/lists/qa/things', undefined, { apiKey: null });
    const log = await emu.admin.requests();
    expect(log).toHaveLength(4);
    expect(JSON.stringify(log)).not.toContain(emu.apiKey);
    expect(log[1]!.path).toBe('/v1/lists/qa/things');
    expect(log.map((e) => e.apiKeyPresent)).toEqual([true, true, true, false]);
    expect(log[2]).toMatchObject({ method: 'POST', status: 200, envelopeStatus: 0, pageIndex: 1, body: '{"PageIndex":1,"PageSize":3}' });
    expect(log[3]).toMatchObject({ status: 401, envelopeStatus: 40100 });
    for (const e of log) expect(e.finishedAt!).toBeGreaterThanOrEqual(e.startedAt);
    expect(await emu.admin.requests(log[2]!.seq)).toHaveLength(1);
    const stats = await emu.admin.stats();
    expect(stats.total).toBe(4);
    expect(stats.byRoute['GET /v1/lists/{appID}/{listID}']).toBe(3);
    expect(stats.maxInFlight).toBeGreaterThanOrEqual(1);
    expect(stats.perSecond.reduce((n, s) => n + s.count, 0)).toBe(4);
  });

  it('reset reseeds; an empty body restores the start options', async () => {
    const r = await emu.admin.reset({ sample: true, items: 10, seedNumber: 3 });
    expect(r.lists).toEqual([{ appID: 'demo', listID: 'orders', count: 10 }]);
    expect((await query(emu, 'qa/things', {})).json.Status).toBe(40400);
    const back = await emu.admin.reset();
    expect(back.lists.map((l) => `${l.appID}/${l.listID}:${l.count}`)).toEqual(['demo/orders:200', 'qa/things:6', 'qa/many:45']);
    await expect(
      emu.admin.reset({ seed: { lists: [{ appID: 'x', listID: 'y', fields: [{ FieldName: 'A', FieldType: 'Text', Type: 'wat' }] }] } }),
    ).rejects.toThrow(/lists\[0\]\.fields\[0\]\.FieldType/);
  });

  it('DELETE /_admin/faults turns every fault off; DELETE /_admin/activity stops simulated users', async () => {
    await emu.admin.setFaults({ errorRate: 1, latencyMs: 5, faultPaths: '/lists/qa/' });
    expect((await call<Envelope>(emu, 'GET', '/lists/qa/things')).status).toBeGreaterThanOrEqual(500);
    const cleared = await emu.admin.clearFaults();
    expect(cleared).toMatchObject({ errorRate: 0, latencyMs: 0, faultPaths: null });
    expect((await call<Envelope>(emu, 'GET', '/lists/qa/things')).json.Status).toBe(0);

    await emu.admin.setActivity({ appID: 'qa', listID: 'many', editsPerSecond: 1000 });
    const stopped = await emu.admin.stopActivity();
    expect(stopped.settings).toBeNull();
    const totals = stopped.totals;
    const before = (await emu.admin.exportList('qa', 'many')).items.map((i) => i['RowVersion']);
    // Nothing to wait for but time: a running activity would have made ~100 edits in these 120 ms.
    await new Promise((r) => setTimeout(r, 120));
    expect((await emu.admin.activity()).totals).toEqual(totals);
    expect((await emu.admin.exportList('qa', 'many')).items.map((i) => i['RowVersion'])).toEqual(before);
  });

  it('GET /_admin lists the routes, the settings route included', async () => {
    const root = (await (await fetch(`${emu.url}/_admin`)).json()) as { routes: string[] };
    for (const r of ['GET|PUT /_admin/settings', 'DELETE /_admin/faults', 'DELETE /_admin/activity'])
      expect(root.routes.join('\n')).toContain(r);
  });

  it('unknown admin routes are 404', async () => {
    const res = await fetch(`${emu.url}/_admin/nothing`);
    expect(res.status).toBe(404);
    const root = await fetch(`${emu.url}/`);
    expect(root.status).toBe(404);
  });
});
