/**
 * A field whose kind changes on the platform (Bigint → Text, the same FieldID) while a user's view
 * is built on the reporting view: plain pulls notice it from a value the numeric column cannot hold,
 * ask `/fields` before writing it, and widen under the view (the column keeps its type, the text
 * lands in `<column>_text`), whether the value is on the pull's first page or a later one. Against
 * the emulator over HTTP and a real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pullList } from '../../src/sync/pull.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const IDS = ['1000000000000000001', '1000000000000000002', '1000000000000000003', '1000000000000000004'];
const FIELDS_ROUTE = 'GET /v1/lists/{appID}/{listID}/fields';

const seed = {
  lists: [
    {
      appID: 'app',
      listID: 'orders',
      fields: [
        { FieldName: 'Title', FieldType: 'Text', Type: 'input', DisplayName: 'Order' },
        { FieldName: 'Bigint1', FieldType: 'Bigint', Type: 'input_number', DisplayName: 'Amount' },
      ],
      items: IDS.map((id, i) => ({
        ListDataID: id,
        Title: `order ${i}`,
        Bigint1: String(10 * (i + 1)),
        Created: `2026-01-02 09:00:0${i}`,
        Modified: `2026-01-02 09:00:0${i}`,
      })),
    },
  ],
};

async function pull(world: World): Promise<number> {
  await world.emu.admin.clearRequests();
  const r = await pullList(world.deps(), world.config.lists[0]!);
  expect(r.status, world.logs.join('')).toBe('succeeded');
  return (await world.emu.admin.requests()).filter((e) => e.route === FIELDS_ROUTE).length;
}

/** A first pull, a user's view on the reporting view, then the field becomes Text. */
async function widenedWorld(pageSize: number): Promise<World> {
  const world = await startWorld({ emulator: { sample: false, seed }, list: { name: 'orders', appID: 'app', listID: 'orders', pageSize } });
  expect(await pull(world)).toBe(1);
  await world.t.db.raw('create view public.order_total as select sum(amount) as total from reporting.orders');
  await world.emu.admin.changeFieldKind('app', 'orders', 'Bigint1', { FieldType: 'Text', Type: 'input' });
  return world;
}

async function reported(world: World): Promise<{ id: string; amount: string | null; amount_text: string | null }[]> {
  return (await world.t.db.raw('select id, amount, amount_text from reporting.orders order by id')).rows as {
    id: string;
    amount: string | null;
    amount_text: string | null;
  }[];
}

describe('a field widened on the platform, under a user view', () => {
  it('text on the first page: one plain pull asks /fields once and the text reaches the column and the reporting view', async () => {
    w = await widenedWorld(1000);
    await w.emu.admin.editItem('app', 'orders', IDS[0]!, { Data: { Bigint1: 'twelve' } });
    expect(await pull(w)).toBe(1);
    const rows = await reported(w);
    expect(rows.map((r) => r.amount_text)).toEqual(['twelve', '20', '30', '40']);
    expect(rows.map((r) => r.amount)).toEqual([null, '20', '30', '40']);
    // The user's view still works on the numeric column.
    expect((await w.t.db.raw('select total from public.order_total')).rows[0].total).toBe('90');
    const changes = (await w.t.db.raw(`select kind, field from listsync.schema_changes where kind = 'widened'`)).rows;
    expect(changes).toEqual([{ kind: 'widened', field: 'Bigint1' }]);
    const failed = (await w.t.db.raw(`select coalesce(sum(rows_failed), 0) as n from listsync.sync_runs`)).rows[0].n as string;
    expect(Number(failed)).toBe(0);
    // Nothing changed since: the next pull asks no field metadata.
    expect(await pull(w)).toBe(0);
  });

  it('text on a later page: the pages before it are written, the table widened, then the text written; the run asks once', async () => {
    w = await widenedWorld(2);
    // Newest first: the two numbers fill page 1, the text is on page 2.
    await w.emu.admin.editItem('app', 'orders', IDS[0]!, { Data: { Bigint1: 'twelve' } });
    await w.emu.admin.editItem('app', 'orders', IDS[1]!, { Data: { Bigint1: '21' } });
    await w.emu.admin.editItem('app', 'orders', IDS[2]!, { Data: { Bigint1: '31' } });
    expect(await pull(w)).toBe(1);
    // Asked after page 2 was read, page 1 not read again (in place, not a restart).
    const log = await w.emu.admin.requests();
    const asked = log.map((e) => (e.route === FIELDS_ROUTE ? 'fields' : `page ${e.pageIndex}`));
    expect(asked.slice(0, 3)).toEqual(['page 1', 'page 2', 'fields']);
    expect(asked.filter((a) => a === 'page 1')).toHaveLength(1);
    const rows = await reported(w);
    expect(rows.map((r) => r.amount_text)).toEqual(['twelve', '21', '31', '40']);
    expect((await w.t.db.raw('select total from public.order_total')).rows[0].total).toBe('92');
    expect(await pull(w)).toBe(0);
  });
});
