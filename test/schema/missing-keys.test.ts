/**
 * Items that omit keys: a platform that leaves empty values out (the emulator's `omitEmptyValues`)
 * against listsync with and without `platform.omitsEmptyValues`. Emulator over HTTP, real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { decodeStorable } from '../../src/mirror/index.js';
import { pullList } from '../../src/sync/pull.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const IDS = ['1000000000000000001', '1000000000000000002'];
const seed = {
  lists: [
    {
      appID: 'app',
      listID: 'keys',
      fields: [
        { FieldName: 'Title', FieldType: 'Text', Type: 'input' },
        { FieldName: 'Text1', FieldType: 'Text', Type: 'input', DisplayName: 'Status' },
        { FieldName: 'Bigint1', FieldType: 'Bigint', Type: 'input_number', DisplayName: 'Amount' },
      ],
      items: IDS.map((id, i) => ({
        ListDataID: id,
        Title: `item ${i}`,
        Text1: 'open',
        Bigint1: '12',
        Created: '2026-01-02 09:00:00',
        Modified: '2026-01-02 09:00:00',
      })),
    },
  ],
};

type Row = { id: string; status: string | null; amount: string | null; _raw: Record<string, unknown> };
const rows = async (world: World): Promise<Row[]> => (await world.t.db.raw('select * from mirror.keys order by id')).rows as Row[];

async function pull(world: World, config: Config = world.config) {
  const r = await pullList({ ...world.deps(), config }, config.lists[0]!);
  expect(r.status).toBe('succeeded');
  return r;
}

describe('an item that omits a mirrored field', () => {
  it('leaves the column and its _raw key as they were and is counted; with platform.omitsEmptyValues it is NULL', async () => {
    w = await startWorld({ emulator: { sample: false, seed }, list: { name: 'keys', appID: 'app', listID: 'keys' } });
    await pull(w);
    await w.emu.admin.setSettings({ omitEmptyValues: true });
    await w.emu.admin.editItem('app', 'keys', IDS[0]!, { Data: { Text1: '', Title: 'edited' } });
    const sent = await w.client.getItem('app', 'keys', IDS[0]!);
    expect(sent).not.toHaveProperty('Text1');

    const r = await pull(w);
    expect(r.counters.rows_missing_keys).toBe(1);
    expect(r.counters.rows_updated).toBe(1);
    let [first] = await rows(w);
    expect(first).toMatchObject({ status: 'open', amount: '12' });
    expect(decodeStorable(first!._raw)).toMatchObject({ Title: 'edited', Text1: 'open', Bigint1: '12' });
    const run = (await w.t.db.raw(`select rows_missing_keys from listsync.sync_runs where id = ?`, [r.runId])).rows[0];
    expect(Number(run.rows_missing_keys)).toBe(1);

    // Told that the platform omits empty values: a missing key is an empty value.
    const omitting = { ...w.config, platform: { ...w.config.platform, omitsEmptyValues: true } } as Config;
    await w.emu.admin.editItem('app', 'keys', IDS[0]!, { Data: { Bigint1: '' } });
    const again = await pull(w, omitting);
    expect(again.counters.rows_missing_keys).toBe(0);
    [first] = await rows(w);
    expect(first).toMatchObject({ status: null, amount: null });
    expect(first!._raw).not.toHaveProperty('Text1');
  });
});

describe('a field every item of a page leaves out, though the platform still lists it', () => {
  const FIELDS_ROUTE = 'GET /v1/lists/{appID}/{listID}/fields';
  const fieldsAsked = async (world: World, config?: Config) => {
    await world.emu.admin.clearRequests();
    await pull(world, config);
    return (await world.emu.admin.requests()).filter((e) => e.route === FIELDS_ROUTE).length;
  };

  it('makes one pull ask /fields; then it is noted and costs no more requests, the column kept', async () => {
    w = await startWorld({ emulator: { sample: false, seed }, list: { name: 'keys', appID: 'app', listID: 'keys' } });
    await pull(w);
    await w.emu.admin.setSettings({ omitEmptyValues: true });
    for (const id of IDS) await w.emu.admin.editItem('app', 'keys', id, { Data: { Text1: '' } });
    expect(await fieldsAsked(w)).toBe(1);
    expect(await fieldsAsked(w)).toBe(0);
    const columns = (
      await w.t.db.raw(
        `select column_name from information_schema.columns where table_schema = 'mirror' and table_name = 'keys' and column_name = 'status'`,
      )
    ).rows;
    expect(columns).toHaveLength(1);
  });

  it('asks nothing with platform.omitsEmptyValues: a page of empty values says nothing', async () => {
    w = await startWorld({ emulator: { sample: false, seed }, list: { name: 'keys', appID: 'app', listID: 'keys' } });
    const omits: Config = { ...w.config, platform: { ...w.config.platform, omitsEmptyValues: true } };
    await pull(w, omits);
    await w.emu.admin.setSettings({ omitEmptyValues: true });
    for (const id of IDS) await w.emu.admin.editItem('app', 'keys', id, { Data: { Text1: '' } });
    expect(await fieldsAsked(w, omits)).toBe(0);
    expect((await rows(w)).map((r) => r.status)).toEqual([null, null]);
  });
});
