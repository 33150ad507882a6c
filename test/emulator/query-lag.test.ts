import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { emulatorOptionsFromCli } from '../../src/emulator/command.js';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, type Item, QA_SEED, call, query, titles } from './helpers.js';

/**
 * The lag runs on the emulator's clock, so these tests pin it and move it
 * through the admin API instead of sleeping.
 */

const T0 = new Date('2026-03-10T09:00:00Z');
const LAG_MS = 5000;
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false, queryLagMs: LAG_MS });
});
afterAll(async () => {
  await emu.close();
});
beforeEach(async () => {
  await emu.admin.reset({});
  await emu.admin.setClock(T0);
});

const at = (ms: number): Date => new Date(T0.getTime() + ms);

async function queried(title: string): Promise<Item | undefined> {
  const r = await query(emu, 'qa/things', { Filters: [{ Field: 'Title', Type: 0, Value: title }] });
  return r.json.Data[0];
}

async function idOf(title: string): Promise<string> {
  return String((await queried(title))!['ListDataID']);
}

describe('query lag', () => {
  it('a PATCH shows in queries only after the lag; a read by ID and the export show it at once', async () => {
    const id = await idOf('alpha');
    const patch = await call<Envelope>(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 1, Data: { Text1: 'changed' } });
    expect(patch.json.Status).toBe(0);

    expect(await queried('alpha')).toMatchObject({ RowVersion: 1, Text1: 'apple' });
    const filtered = await query(emu, 'qa/things', { Filters: [{ Field: 'Text1', Type: 0, Value: 'changed' }] });
    expect(filtered.json.TotalCount).toBe(0);
    const read = await call<Envelope<Item>>(emu, 'GET', `/lists/qa/things/items/${id}`);
    expect(read.json.Data).toMatchObject({ RowVersion: 2, Text1: 'changed' });
    const exported = await emu.admin.exportList('qa', 'things');
    expect(exported.items.find((i) => i['ListDataID'] === id)).toMatchObject({ RowVersion: 2, Text1: 'changed' });

    await emu.admin.setClock(at(LAG_MS - 1));
    expect(await queried('alpha')).toMatchObject({ RowVersion: 1 });
    await emu.admin.setClock(at(LAG_MS));
    expect(await queried('alpha')).toMatchObject({ RowVersion: 2, Text1: 'changed' });
  });

  it('a created item is absent and a deleted one still listed until the lag has passed, in ID order', async () => {
    const all = titles((await query(emu, 'qa/things', { PageSize: 100 })).json.Data);
    const created = await call<Envelope<string>>(emu, 'POST', '/lists/qa/things/items', { Data: { Title: 'golf' } });
    await call(emu, 'DELETE', `/lists/qa/things/items/${await idOf('charlie')}`);
    const during = await query(emu, 'qa/things', { PageSize: 100 });
    expect(titles(during.json.Data)).toEqual(all);
    expect(during.json.TotalCount).toBe(all.length);
    expect((await call<Envelope>(emu, 'GET', `/lists/qa/things/items/${created.json.Data}`)).json.Status).toBe(0);

    await emu.admin.setClock(at(LAG_MS));
    const after = titles((await query(emu, 'qa/things', { PageSize: 100 })).json.Data);
    expect(after).toEqual([...all.filter((t) => t !== 'charlie'), 'golf']);
  });

  it('several writes inside the lag: queries keep the first state until the last write has aged', async () => {
    const id = await idOf('bravo');
    await emu.admin.editItem('qa', 'things', id, { Data: { Text1: 'one' } });
    await emu.admin.setClock(at(3000));
    await emu.admin.editItem('qa', 'things', id, { Data: { Text1: 'two' } });
    await emu.admin.setClock(at(LAG_MS));
    expect(await queried('bravo')).toMatchObject({ RowVersion: 1, Text1: 'banana' });
    await emu.admin.setClock(at(3000 + LAG_MS));
    expect(await queried('bravo')).toMatchObject({ RowVersion: 3, Text1: 'two' });
  });

  it('is switched at run time through the admin API; 0 shows writes at once', async () => {
    expect((await emu.admin.settings()).queryLagMs).toBe(LAG_MS);
    await emu.admin.setSettings({ queryLagMs: 0 });
    try {
      const id = await idOf('delta');
      await call(emu, 'PATCH', `/lists/qa/things/items/${id}`, { RowVersion: 0, Data: { Text1: 'now' } });
      expect(await queried('delta')).toMatchObject({ RowVersion: 2, Text1: 'now' });
      await expect(emu.admin.setSettings({ queryLagMs: -1 })).rejects.toThrow(/queryLagMs/);
    } finally {
      await emu.admin.setSettings({ queryLagMs: LAG_MS });
    }
  });

  it('comes from --query-lag or a seed key', async () => {
    expect(emulatorOptionsFromCli({ port: 0, host: '127.0.0.1', queryLag: 250 })).toMatchObject({ queryLagMs: 250 });
    const seeded = await startEmulator({ port: 0, seed: { ...QA_SEED, queryLagMs: 1234 }, rateLimit: false });
    try {
      expect((await seeded.admin.settings()).queryLagMs).toBe(1234);
    } finally {
      await seeded.close();
    }
  });
});
