/**
 * Every value exact: long IDs inside multi-value strings and file objects keep
 * every digit in the mirror and in what write-back sends; an SQL append sends
 * exactly the old IDs plus the new one, in the form the item had. Real
 * PostgreSQL, the emulator over HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseLossless, isLosslessNumber } from 'lossless-json';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const fast = { rereadDelaysMs: [10, 20] };
const BIG = ['1177823559771361293', '9223372036854775807', '1000000000000000001'];
const NEW_ID = '1177823559771361297';

/** The elements of a platform array string, each as its digits and whether it was a bare number. */
const elements = (s: unknown): { text: string; bare: boolean }[] =>
  (parseLossless(String(s)) as unknown[]).map((e) =>
    isLosslessNumber(e) ? { text: e.value, bare: true } : { text: String(e), bare: false },
  );

async function listWithIdFields(world: World): Promise<void> {
  await world.emu.admin.addField('demo', 'orders', { FieldName: 'Text9', FieldType: 'Text', Type: 'checkbox', DisplayName: 'Related' });
  await world.emu.admin.addField('demo', 'orders', {
    FieldName: 'Text10',
    FieldType: 'Text',
    Type: 'lookup',
    DisplayName: 'Links',
    Rules: { Multiple: true },
  });
}

describe('long IDs inside platform values', () => {
  it('checkbox, multi lookup and file values with 19-digit IDs as bare numbers and as strings: every digit in the columns, an SQL append sends the old IDs plus the new one, a second pull changes no row', async () => {
    w = await startWorld({ emulator: { items: 6 } });
    const world = w;
    await world.emu.admin.setSettings({ multiValueNumbers: 'as-written' });
    await listWithIdFields(world);
    const items = (await world.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID));
    const [bare, strings] = items as [string, string];
    await world.emu.admin.editItem('demo', 'orders', bare, {
      Data: {
        Text9: `[${BIG.join(',')}]`,
        Text10: `[${BIG[2]},${BIG[0]}]`,
        [F.attachment]: `[{"id":${BIG[0]},"name":"a.pdf","fileSize":12}]`,
      },
    });
    await world.emu.admin.editItem('demo', 'orders', strings, {
      Data: {
        Text9: JSON.stringify(BIG),
        Text10: JSON.stringify([BIG[2], BIG[0]]),
        [F.attachment]: `[{"id":"${BIG[1]}","name":"b.pdf","fileSize":13}]`,
      },
    });
    const list = world.config.lists[0]!;
    await pullList(world.deps(), list);

    const read = async () =>
      (
        (await world.t.db.raw(
          `select id, related::text as related, links::text as links, attachment::text as attachment, row_version from mirror.orders where id = any(?) order by id`,
          [[bare, strings]],
        )) as { rows: { id: string; related: string; links: string; attachment: string; row_version: number }[] }
      ).rows;
    const before = await read();
    const byId = new Map(before.map((r) => [r.id, r]));
    for (const id of [bare, strings]) {
      expect(byId.get(id)!.related).toBe(`{${BIG.join(',')}}`);
      expect(byId.get(id)!.links).toBe(`{${BIG[2]},${BIG[0]}}`);
    }
    expect(byId.get(bare)!.attachment).toBe(`[{"id": ${BIG[0]}, "name": "a.pdf", "fileSize": 12}]`);
    expect(byId.get(strings)!.attachment).toBe(`[{"id": "${BIG[1]}", "name": "b.pdf", "fileSize": 13}]`);

    await world.t.db.raw(`update mirror.orders set related = related || ?::text where id = any(?)`, [NEW_ID, [bare, strings]]);
    await world.t.db.raw(`update mirror.orders set attachment = attachment || ?::jsonb where id = ?`, [
      `[{"id":${NEW_ID},"name":"c.pdf","fileSize":1}]`,
      bare,
    ]);
    const pushed = await pushList({ ...world.deps(), ...fast }, list);
    expect(pushed).toMatchObject({ applied: 2, failed: 0, conflicts: 0 });
    const platform = new Map((await world.emu.admin.exportList('demo', 'orders')).items.map((i) => [String(i.ListDataID), i]));
    // Exactly the old IDs plus the new one, each in the form the item had.
    expect(elements(platform.get(bare)!.Text9)).toEqual([...BIG, NEW_ID].map((text) => ({ text, bare: true })));
    expect(elements(platform.get(strings)!.Text9)).toEqual([...BIG, NEW_ID].map((text) => ({ text, bare: false })));
    expect(platform.get(bare)![F.attachment]).toBe(
      `[{"id":${BIG[0]},"name":"a.pdf","fileSize":12},{"id":${NEW_ID},"name":"c.pdf","fileSize":1}]`,
    );

    const second = await pullList(world.deps(), list);
    expect(second.counters.rows_updated).toBe(0);
    const after = await read();
    expect(after.map((r) => r.related)).toEqual([`{${[...BIG, NEW_ID].join(',')}}`, `{${[...BIG, NEW_ID].join(',')}}`]);
    expect(after.map((r) => r.links)).toEqual(before.map((r) => r.links));
    expect(after.map((r) => r.attachment)).toEqual([
      `[{"id": ${BIG[0]}, "name": "a.pdf", "fileSize": 12}, {"id": ${NEW_ID}, "name": "c.pdf", "fileSize": 1}]`,
      before[1]!.attachment,
    ]);
  });

  it('under the emulator default (IDs stored as bare numbers) an appended ID is stored bare with the others, every digit kept', async () => {
    w = await startWorld({ emulator: { items: 3 } });
    const world = w;
    await listWithIdFields(world);
    const [id] = (await world.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID)) as [string];
    const list = world.config.lists[0]!;
    await pullList(world.deps(), list);
    await world.t.db.raw(`update mirror.orders set links = ?::text[] where id = ?`, [`{${BIG[0]},${BIG[1]}}`, id]);
    await pushList({ ...world.deps(), ...fast }, list);
    await world.t.db.raw(`update mirror.orders set links = links || ?::text where id = ?`, [NEW_ID, id]);
    expect(await pushList({ ...world.deps(), ...fast }, list)).toMatchObject({ applied: 1, failed: 0 });
    const item = (await world.emu.admin.exportList('demo', 'orders')).items.find((i) => String(i.ListDataID) === id)!;
    expect(item.Text10).toBe(`[${BIG[0]},${BIG[1]},${NEW_ID}]`);
    const row = (await world.t.db.raw(`select links::text as links from mirror.orders where id = ?`, [id])) as {
      rows: { links: string }[];
    };
    expect(row.rows[0]!.links).toBe(`{${BIG[0]},${BIG[1]},${NEW_ID}}`);
  });

  it('an element that is a rounded copy of an ID the platform holds is refused with a message, never sent', async () => {
    w = await startWorld({ emulator: { items: 3 } });
    const world = w;
    await listWithIdFields(world);
    const [id] = (await world.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID)) as [string];
    await world.emu.admin.editItem('demo', 'orders', id, { Data: { Text9: `[${BIG[0]}]` } });
    const list = world.config.lists[0]!;
    await pullList(world.deps(), list);
    // What an older release left in the column: the ID read through a double.
    await world.t.db.raw(`update mirror.orders set related = '{1177823559771361300,${NEW_ID}}' where id = ?`, [id]);
    await world.emu.admin.clearRequests();
    const preview = await runCli(['--config', world.configFile, 'push', '--dry-run'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(preview.stdout).toMatch(/column related cannot be converted for the platform/);
    const r = await pushList({ ...world.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 0, failed: 1 });
    expect((await world.emu.admin.requests()).filter((e) => e.method === 'PATCH')).toEqual([]);
    const change = (await world.t.db('listsync.outbox').first('status', 'last_error')) as { status: string; last_error: string };
    expect(change.status).toBe('failed');
    expect(change.last_error).toMatch(/1177823559771361300 is not exact: the platform holds 1177823559771361293/);
  });

  it("an ID appended beside the exact base elements is the user's, sent as written, even when it equals their rounded form", async () => {
    w = await startWorld({ emulator: { items: 3 } });
    const world = w;
    await listWithIdFields(world);
    const [id] = (await world.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID)) as [string];
    await world.emu.admin.editItem('demo', 'orders', id, { Data: { Text10: '[1177823559771361293,1177823559771361295]' } });
    const list = world.config.lists[0]!;
    await pullList(world.deps(), list);
    await world.t.db.raw(`update mirror.orders set links = links || '1177823559771361300'::text where id = ?`, [id]);
    await world.emu.admin.clearRequests();
    expect(await pushList({ ...world.deps(), ...fast }, list)).toMatchObject({ applied: 1, failed: 0 });
    const sent = (await world.emu.admin.requests()).filter((e) => e.method === 'PATCH').map((p) => JSON.parse(p.body!) as { Data: object });
    expect(sent.map((p) => p.Data)).toEqual([{ Text10: '[1177823559771361293,1177823559771361295,1177823559771361300]' }]);
    const item = (await world.emu.admin.exportList('demo', 'orders')).items.find((i) => String(i.ListDataID) === id)!;
    expect(item.Text10).toBe('[1177823559771361293,1177823559771361295,1177823559771361300]');
  });

  it('a create and an edit carrying new IDs, answers lost: the platform stores them bare, the push recognises them as its own, one item each', async () => {
    w = await startWorld({ emulator: { items: 3 }, platform: { retries: 1 } });
    const world = w;
    await listWithIdFields(world);
    const list = world.config.lists[0]!;
    await pullList(world.deps(), list);
    const [id] = (await world.t.db('mirror.orders').orderBy('id').limit(1).pluck('id')) as [string];
    await world.t.db.raw(`update mirror.orders set links = ?::text[] where id = ?`, [`{${BIG[0]}}`, id]);
    await world.t.db.raw(`insert into mirror.orders (customer, order_no, links) values ('with ids', 'N-IDS', ?::text[])`, [
      `{${BIG[1]},${BIG[2]}}`,
    ]);
    await world.emu.admin.setFaults({ loseWriteAnswers: 2 });
    const r = await pushList({ ...world.deps(), ...fast }, list);
    expect(r).toMatchObject({ applied: 1, created: 1, conflicts: 0, failed: 0 });
    const items = (await world.emu.admin.exportList('demo', 'orders')).items;
    expect(items.filter((i) => i[F.orderNo] === 'N-IDS').map((i) => i.Text10)).toEqual([`[${BIG[1]},${BIG[2]}]`]);
    expect(items.find((i) => String(i.ListDataID) === id)!.Text10).toBe(`[${BIG[0]}]`);
  });

  it('jsonb read back from PostgreSQL keeps integers beyond 2^53 as their digits (a captured file edit, a conflict side)', async () => {
    w = await startWorld({ emulator: { items: 1 } });
    const res = (await w.t.db.raw(`select ?::jsonb as j`, [`{"id":${BIG[0]},"ids":[${BIG[1]},2],"s":"${BIG[2]}","n":1.5}`])) as {
      rows: { j: unknown }[];
    };
    expect(res.rows[0]!.j).toEqual({ id: BIG[0], ids: [BIG[1], 2], s: BIG[2], n: 1.5 });
  });
});
