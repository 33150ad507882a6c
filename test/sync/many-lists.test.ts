/**
 * What a pull of many small lists costs (src/sync/pull.ts I6, I7;
 * src/sync/list-fields.ts; src/commands/pull-command.ts): a first pull is each list's
 * page and field metadata, the titles one listing per application; an idle
 * pull is one request per list; the field metadata is asked again only for a
 * reason (a key the mirror does not know, `--refresh-schema`, its age). The
 * lists of one pull overlap. Counted in the requests the emulator received.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestLogEntry } from '../../src/emulator/index.js';
import { runCli } from '../helpers/cli.js';
import { fleetConfigLists, fleetListId, fleetSeed, FLEET_APP } from '../helpers/many-lists.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

const LISTS = 30;
const ITEMS = 200;
const FIELDS_ROUTE = 'GET /v1/lists/{appID}/{listID}/fields';

describe('a pull of many small lists', () => {
  let w: World;
  let env: Record<string, string>;
  beforeAll(async () => {
    w = await startWorld({
      emulator: { sample: false, seed: fleetSeed(LISTS, ITEMS), faults: { latencyMs: 30 } },
      lists: fleetConfigLists(LISTS),
    });
    env = { PLATFORM_API_KEY: w.emu.apiKey };
  });
  afterAll(async () => w?.close());

  const pull = async (...args: string[]) => {
    await w.emu.admin.clearRequests();
    const r = await runCli(['--config', w.configFile, 'pull', ...args], { env, cwd: w.cwd });
    expect(r.stderr).not.toMatch(/failed/);
    expect(r.code).toBe(0);
    return { ...r, log: await w.emu.admin.requests() };
  };
  const of = (log: RequestLogEntry[], listID: string) =>
    log.filter((e) => e.path.includes(`/lists/${FLEET_APP}/${listID}/`) || e.path.endsWith(`/lists/${FLEET_APP}/${listID}`));
  const fieldsAsked = (log: RequestLogEntry[]) => log.filter((e) => e.route === FIELDS_ROUTE);

  it('a first pull asks each list its page and its fields, the titles once for the application, and overlaps the lists', async () => {
    const { log, stdout } = await pull();
    expect(stdout.match(/: succeeded/g)).toHaveLength(LISTS);
    // 200 items on a page of 1000: the page gives the start answers, no probe and no second page.
    expect(log.filter((e) => e.path.endsWith('/items/query'))).toHaveLength(LISTS);
    expect(fieldsAsked(log)).toHaveLength(LISTS);
    expect(log.filter((e) => e.route === 'GET /v1/applications/{id}/lists')).toHaveLength(1);
    expect(log.filter((e) => e.route === 'GET /v1/lists/{appID}/{listID}')).toHaveLength(0);
    expect(log.length / LISTS).toBeLessThanOrEqual(2.5);
    // Lists overlap: some list's first request left before the list before it had its last answer.
    const spans = Array.from({ length: LISTS }, (_, i) => {
      const mine = of(log, fleetListId(i));
      return { start: Math.min(...mine.map((e) => e.startedAt)), end: Math.max(...mine.map((e) => e.finishedAt ?? Infinity)) };
    }).sort((a, b) => a.start - b.start);
    expect(spans.some((s, i) => i > 0 && s.start < spans[i - 1]!.end)).toBe(true);
    for (let i = 0; i < LISTS; i++) await expectMirrorEqualsPlatform(w, `fleet_${fleetListId(i)}`, FLEET_APP, fleetListId(i));
    const titles = await w.t.db('listsync.lists').whereNotNull('title').count<{ count: string }[]>('* as count');
    expect(Number(titles[0]!.count)).toBe(LISTS);
  });

  it('an idle pull asks one page per list and no field metadata', async () => {
    const { log } = await pull();
    expect(log).toHaveLength(LISTS);
    expect(log.every((e) => e.path.endsWith('/items/query'))).toBe(true);
  });

  it('an item carrying a key the mirror does not know: that list asks its fields again, in the same run, and fills the new column', async () => {
    const listID = fleetListId(1);
    await w.emu.admin.addField(FLEET_APP, listID, { FieldName: 'Text3', FieldType: 'Text', Type: 'input', DisplayName: 'Colour' });
    const item = (await w.emu.admin.exportList(FLEET_APP, listID)).items[7]!;
    await w.emu.admin.editItem(FLEET_APP, listID, String(item.ListDataID), { Data: { Text3: 'teal' } });
    const { log } = await pull();
    expect(fieldsAsked(log).map((e) => e.path)).toEqual([`/v1/lists/${FLEET_APP}/${listID}/fields`]);
    const row = (await w.t
      .db('mirror.fleet_l002')
      .where({ id: String(item.ListDataID) })
      .first()) as Record<string, unknown>;
    expect(row.colour).toBe('teal');
    await expectMirrorEqualsPlatform(w, 'fleet_l002', FLEET_APP, listID);
    // The list is idle again afterwards.
    expect(fieldsAsked((await pull()).log)).toHaveLength(0);
  });

  it('--refresh-schema asks the fields; metadata older than fieldsMaxAgeHours is asked again', async () => {
    const listID = fleetListId(2);
    const asked = await pull('--list', `fleet_${listID}`, '--refresh-schema');
    expect(fieldsAsked(asked.log)).toHaveLength(1);
    await w.t
      .db('listsync.lists')
      .where({ name: `fleet_${fleetListId(3)}` })
      .update({ field_meta_at: w.t.db.raw(`now() - interval '25 hours'`) });
    const aged = await pull();
    expect(fieldsAsked(aged.log).map((e) => e.path)).toEqual([`/v1/lists/${FLEET_APP}/${fleetListId(3)}/fields`]);
  });

  it('by default the kept metadata serves 15 minutes: 14 minutes old it is used, 16 minutes old it is asked again', async () => {
    const age = (i: number, minutes: number) =>
      w.t
        .db('listsync.lists')
        .where({ name: `fleet_${fleetListId(i)}` })
        .update({ field_meta_at: w.t.db.raw(`now() - make_interval(mins => ?)`, [minutes]) });
    await age(5, 14);
    await age(6, 16);
    const { log } = await pull();
    expect(fieldsAsked(log).map((e) => e.path)).toEqual([`/v1/lists/${FLEET_APP}/${fleetListId(6)}/fields`]);
  });

  it('a write the platform refuses naming a field: the next pull asks the field metadata again', async () => {
    const listID = fleetListId(4);
    const name = `fleet_${listID}`;
    // Removed on the platform; the kept metadata still has it.
    await w.emu.admin.deleteField(FLEET_APP, listID, 'Text2');
    const row = (await w.t.db(`mirror.${name}`).first('id')) as { id: string };
    await w.t.db(`mirror.${name}`).where({ id: row.id }).update({ notes: 'edited in SQL' });
    await runCli(['--config', w.configFile, 'push', '--list', name], { env, cwd: w.cwd });
    const kept = (await w.t.db('listsync.lists').where({ name }).first('field_meta_at')) as { field_meta_at: Date | null };
    expect(kept.field_meta_at).toBeNull();
    const { log } = await pull('--list', name);
    expect(fieldsAsked(log).map((e) => e.path)).toEqual([`/v1/lists/${FLEET_APP}/${listID}/fields`]);
    const registry = (await w.t.db('listsync.lists').where({ name }).first('fields')) as { fields: { field: string; removed: boolean }[] };
    expect(registry.fields.find((f) => f.field === 'Text2')?.removed).toBe(true);
  });
});
