/**
 * A field is its FieldID plus its slot: when the platform gives a slot to another field, the old
 * field's values stay in the mirror (column `<column>_removed`, `_raw` key `<slot>@<column>`) and
 * the new field gets a column of its own. Against the emulator over HTTP and a real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeStorable } from '../../src/storable.js';
import { pullList } from '../../src/sync/pull.js';
import { minutesLater } from '../helpers/later.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const NOTES = ['call back', 'urgent', 'paid in cash'];
const IDS = ['1000000000000000001', '1000000000000000002', '1000000000000000003'];

const seed = {
  lists: [
    {
      appID: 'app',
      listID: 'tasks',
      fields: [
        { FieldName: 'Title', FieldType: 'Text', Type: 'input', DisplayName: 'Task' },
        { FieldName: 'Text4', FieldType: 'Text', Type: 'textarea', DisplayName: 'Notes' },
      ],
      items: IDS.map((id, i) => ({
        ListDataID: id,
        Title: `task ${i}`,
        Text4: NOTES[i],
        Created: '2026-01-02 09:00:00',
        Modified: '2026-01-02 09:00:00',
      })),
    },
  ],
};

/** Plain pulls with the default field metadata age: what the items show makes a pull ask `/fields`, or the kept answer's age. */
async function world(): Promise<World> {
  return startWorld({ emulator: { sample: false, seed }, list: { name: 'tasks', appID: 'app', listID: 'tasks' } });
}

type Row = { id: string; notes_removed: string | null; priority: string | null; _raw: Record<string, unknown> };

async function rows(world: World): Promise<Row[]> {
  return (await world.t.db.raw('select * from mirror.tasks order by id')).rows as Row[];
}

/** A plain pull (`clock`: one that runs later, past the kept field metadata's age); returns how often it asked `/fields`. */
async function pull(world: World, clock?: () => Date): Promise<number> {
  await world.emu.admin.clearRequests();
  const r = await pullList({ ...world.deps(), ...(clock ? { clock } : {}) }, world.config.lists[0]!);
  expect(r.status).toBe('succeeded');
  return (await world.emu.admin.requests()).filter((e) => e.route === 'GET /v1/lists/{appID}/{listID}/fields').length;
}

/** The slot reused and one item given a priority; then a pull (`clock`: minutes later). */
async function reuseAndPull(world: World, clock?: () => Date): Promise<number> {
  await world.emu.admin.reuseSlot('app', 'tasks', 'Text4', { FieldType: 'Text', Type: 'radio', DisplayName: 'Priority' });
  await world.emu.admin.editItem('app', 'tasks', IDS[1]!, { Data: { Text4: 'high' } });
  return pull(world, clock);
}

async function expectOldAndNewApart(world: World): Promise<void> {
  const r = await rows(world);
  expect(r.map((x) => x.notes_removed)).toEqual(NOTES);
  expect(r.map((x) => x.priority)).toEqual([null, 'high', null]);
  const raws = r.map((x) => decodeStorable(x._raw) as Record<string, unknown>);
  expect(raws.map((x) => x['Text4@notes_removed'])).toEqual(NOTES);
  expect(raws[1]!.Text4).toBe('high');
  const changes = (await world.t.db.raw(`select kind, field, column_name, message from listsync.schema_changes where kind = 'slot-reused'`))
    .rows as { field: string; column_name: string; message: string }[];
  expect(changes).toEqual([expect.objectContaining({ field: 'Text4', column_name: 'notes_removed' })]);
  expect(changes[0]!.message).toMatch(/reused slot Text4 .*"Priority".*was "Notes"/);
}

describe('a slot the platform gives to another field', () => {
  it('seen by a pull as removed first: the kept notes are never overwritten by the new field', async () => {
    w = await world();
    await pull(w);
    expect((await w.t.db.raw('select notes from mirror.tasks order by id')).rows.map((r: { notes: string }) => r.notes)).toEqual(NOTES);

    // Items stop carrying Text4: the pull asks /fields once and keeps the column as removed.
    await w.emu.admin.deleteField('app', 'tasks', 'Text4');
    expect(await pull(w)).toBe(1);
    // Text4 is back in the items: a removed field's key, so the pull asks again before writing.
    expect(await reuseAndPull(w)).toBe(1);
    await expectOldAndNewApart(w);
    // Nothing changed since: an idle pull asks no field metadata.
    expect(await pull(w)).toBe(0);

    // Later pulls and edits leave the old field's values alone.
    await w.emu.admin.editItem('app', 'tasks', IDS[0]!, { Data: { Text4: 'low' } });
    await pull(w);
    const r = await rows(w);
    expect(r.map((x) => x.notes_removed)).toEqual(NOTES);
    expect(r.map((x) => x.priority)).toEqual(['low', 'high', null]);
    expect((decodeStorable(r[0]!._raw) as Record<string, unknown>)['Text4@notes_removed']).toBe(NOTES[0]);
  });

  it('between two pulls minutes apart: the old notes are not shown as the new field, and stay whole', async () => {
    w = await world();
    await pull(w);
    // Removed and reused between two pulls, the items show no sign: the kept metadata's age makes the next pull ask.
    expect(await reuseAndPull(w, minutesLater())).toBe(1);
    await expectOldAndNewApart(w);
    const view = (await w.t.db.raw('select notes_removed, priority from reporting.tasks order by id')).rows;
    expect(view).toEqual([
      { notes_removed: NOTES[0], priority: null },
      { notes_removed: NOTES[1], priority: 'high' },
      { notes_removed: NOTES[2], priority: null },
    ]);
  });

  it('a platform that leaves the old values in the slot: the new column shows what the platform says, the kept one the old field', async () => {
    w = await world();
    await pull(w);
    await w.emu.admin.reuseSlot('app', 'tasks', 'Text4', { FieldType: 'Text', Type: 'radio', DisplayName: 'Priority', keepValues: true });
    await pull(w, minutesLater());
    const r = await rows(w);
    expect(r.map((x) => x.notes_removed)).toEqual(NOTES);
    expect(r.map((x) => x.priority)).toEqual(NOTES);
  });
});
