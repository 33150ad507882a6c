/**
 * Conflicts merged field by field (lists[].conflictScope `field`, the
 * default): the fields only the user changed are sent in one PATCH at the
 * platform's version, the same value on both sides is no conflict, only the
 * fields both changed differently are in conflict and decided by the policy;
 * `conflictScope: item` keeps whole-item conflicts. Real PostgreSQL, the
 * emulator over HTTP, the CLI in a child process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

type Patch = { RowVersion: number; Data: Record<string, string> };

interface Edited {
  world: World;
  id: string;
  /** The platform's version after its own edit. */
  version: number;
}

/** A pulled list; the platform edits `remote` of the first item, then SQL edits `local` of it. */
async function editedOnBothSides(
  list: Record<string, unknown>,
  remote: Record<string, string>,
  local: Record<string, string>,
): Promise<Edited> {
  w = await startWorld({ emulator: { items: 5 }, list });
  const world = w;
  await pullList(world.deps(), world.config.lists[0]!);
  const id = String(((await world.t.db('mirror.orders').orderBy('id').first('id')) as { id: string }).id);
  await world.emu.admin.editItem('demo', 'orders', id, { Data: remote });
  await world.t.db('mirror.orders').where({ id }).update(local);
  await world.emu.admin.clearRequests();
  return { world, id, version: Number((await item(world, id)).RowVersion) };
}

const item = async (world: World, id: string) =>
  (await world.emu.admin.exportList('demo', 'orders')).items.find((i) => String(i.ListDataID) === id)!;
/** Every PATCH the platform received, in order. */
const patches = async (world: World): Promise<Patch[]> =>
  (await world.emu.admin.requests()).filter((e) => e.method === 'PATCH').map((p) => JSON.parse(p.body!) as Patch);
const push = (world: World) => runCli(['--config', world.configFile, 'push'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
const conflicts = (world: World) =>
  world.t.db('listsync.conflicts').select('local', 'status', 'resolution', 'remote_version') as Promise<
    { local: Record<string, unknown>; status: string; resolution: string | null; remote_version: number }[]
  >;

describe('a three-way merge per field', () => {
  it("the platform changed customer, SQL changed notes: one PATCH with notes alone at the platform's version, exit 0, no conflict, both edits kept", async () => {
    const { world, id, version } = await editedOnBothSides({}, { [F.customer]: 'Remote Ltd' }, { notes: 'local note' });
    const env = { PLATFORM_API_KEY: world.emu.apiKey };
    const preview = await runCli(['--config', world.configFile, 'push', '--dry-run'], { env });
    expect(preview.stdout).toMatch(/1 would apply, 0 would conflict/);
    expect(preview.stdout).toMatch(/merged field by field, Text4 would be sent at the platform's version/);
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1 applied, 0 created, 0 conflict\(s\), 0 failed/);
    expect(r.stdout).toMatch(/1 field only you changed was merged/);
    const sent = await patches(world);
    expect(sent.at(-1)).toEqual({ RowVersion: version, Data: { [F.notes]: 'local note' } });
    expect(sent.filter((p) => p.RowVersion === version)).toHaveLength(1);
    expect(await conflicts(world)).toEqual([]);
    expect(await item(world, id)).toMatchObject({ [F.customer]: 'Remote Ltd', [F.notes]: 'local note' });
    expect(await world.t.db('mirror.orders').where({ id }).first('customer', 'notes')).toEqual({
      customer: 'Remote Ltd',
      notes: 'local note',
    });
    expect(await world.t.db('listsync.outbox').whereNot({ status: 'applied' })).toEqual([]);
  });

  it('both changed customer differently, SQL also changed notes (remote-wins): notes applied, customer alone in conflict, the platform keeps its customer', async () => {
    const { world, id, version } = await editedOnBothSides(
      {},
      { [F.customer]: 'Remote Ltd' },
      { customer: 'Local Co', notes: 'local note' },
    );
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/0 applied, 0 created, 1 conflict\(s\)/);
    expect(r.stdout).toMatch(/1 of 1 conflict settled by policy/);
    expect(r.stdout).toContain('listsync conflicts --all --list orders');
    expect((await patches(world)).at(-1)).toEqual({ RowVersion: version, Data: { [F.notes]: 'local note' } });
    expect(await item(world, id)).toMatchObject({ [F.customer]: 'Remote Ltd', [F.notes]: 'local note' });
    expect(await conflicts(world)).toEqual([
      { local: { customer: 'Local Co' }, status: 'resolved', resolution: 'remote-wins', remote_version: version + 1 },
    ]);
    expect(await world.t.db('mirror.orders').where({ id }).first('customer', 'notes')).toEqual({
      customer: 'Remote Ltd',
      notes: 'local note',
    });
    const listed = await runCli(['--config', world.configFile, 'conflicts'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(listed.stdout).toMatch(/no open conflicts; 1 conflict settled .*listsync conflicts --all/);
  });

  it('the same edit under manual: notes applied, customer held open alone; conflicts show names it by display name with its slot', async () => {
    const { world, id, version } = await editedOnBothSides(
      { conflictPolicy: 'manual' },
      { [F.customer]: 'Remote Ltd' },
      { customer: 'Local Co', notes: 'local note' },
    );
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect((await patches(world)).at(-1)).toEqual({ RowVersion: version, Data: { [F.notes]: 'local note' } });
    expect(await item(world, id)).toMatchObject({ [F.customer]: 'Remote Ltd', [F.notes]: 'local note' });
    expect(await conflicts(world)).toEqual([
      { local: { customer: 'Local Co' }, status: 'open', resolution: null, remote_version: version + 1 },
    ]);
    const held = (await world.t.db('listsync.outbox').where({ status: 'conflict' }).select('changes')) as { changes: object }[];
    expect(held).toEqual([{ changes: { customer: 'Local Co' } }]);
    const show = await runCli(['--config', world.configFile, 'conflicts', 'show', '1'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(show.stdout).toMatch(/Customer\s+Text2\s+customer\s+\S.*Local Co\s+Remote Ltd/);
  });

  it("local-wins: both fields go in one PATCH at the platform's version, the conflict recorded as settled", async () => {
    const { world, id, version } = await editedOnBothSides(
      { conflictPolicy: 'local-wins' },
      { [F.customer]: 'Remote Ltd' },
      { customer: 'Local Co', notes: 'local note' },
    );
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect((await patches(world)).at(-1)).toEqual({ RowVersion: version, Data: { [F.notes]: 'local note', [F.customer]: 'Local Co' } });
    expect(await item(world, id)).toMatchObject({ [F.customer]: 'Local Co', [F.notes]: 'local note' });
    expect(await conflicts(world)).toEqual([
      { local: { customer: 'Local Co' }, status: 'resolved', resolution: 'local-wins', remote_version: version },
    ]);
  });

  it('both set the same value: no conflict, nothing more is sent, exit 0', async () => {
    const { world, id, version } = await editedOnBothSides({}, { [F.customer]: 'Same Co' }, { customer: 'Same Co' });
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1 applied, 0 created, 0 conflict\(s\)/);
    expect((await patches(world)).filter((p) => p.RowVersion === version)).toEqual([]);
    expect(await conflicts(world)).toEqual([]);
    expect(Number((await item(world, id)).RowVersion)).toBe(version);
    expect(await world.t.db('listsync.outbox').whereNot({ status: 'applied' })).toEqual([]);
  });

  it('conflictScope item keeps whole-item conflicts: nothing is sent, the whole edit is in the conflict (remote-wins)', async () => {
    const { world, id, version } = await editedOnBothSides(
      { conflictScope: 'item' },
      { [F.customer]: 'Remote Ltd' },
      { notes: 'local note' },
    );
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/0 applied, 0 created, 1 conflict\(s\)/);
    expect((await patches(world)).filter((p) => p.RowVersion === version)).toEqual([]);
    expect(await conflicts(world)).toEqual([
      { local: { notes: 'local note' }, status: 'resolved', resolution: 'remote-wins', remote_version: version },
    ]);
    expect((await item(world, id))[F.notes]).not.toBe('local note');
  });

  it('a pull that reads the item first decides the conflicting field (remote-wins) and leaves the other pending; the push then sends it', async () => {
    const { world, id, version } = await editedOnBothSides(
      {},
      { [F.customer]: 'Remote Ltd' },
      { customer: 'Local Co', notes: 'local note' },
    );
    const pulled = await pullList(world.deps(), world.config.lists[0]!);
    expect(pulled.counters.changes_conflicted).toBe(1);
    expect(await conflicts(world)).toEqual([
      { local: { customer: 'Local Co' }, status: 'resolved', resolution: 'remote-wins', remote_version: version },
    ]);
    expect(await world.t.db('listsync.outbox').where({ status: 'pending' }).pluck('changes')).toEqual([{ notes: 'local note' }]);
    const r = await push(world);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(await item(world, id)).toMatchObject({ [F.customer]: 'Remote Ltd', [F.notes]: 'local note' });
    expect(await world.t.db('mirror.orders').where({ id }).first('customer', 'notes')).toEqual({
      customer: 'Remote Ltd',
      notes: 'local note',
    });
  });
});

describe('an open conflict follows the platform', () => {
  it('a pull that reads the item again records its latest version and values in the open conflict; conflicts show draws them', async () => {
    const { world, id, version } = await editedOnBothSides(
      { conflictPolicy: 'manual' },
      { [F.customer]: 'Remote Ltd' },
      { customer: 'Local Co' },
    );
    expect((await push(world)).code).toBe(0);
    expect(await conflicts(world)).toEqual([
      { local: { customer: 'Local Co' }, status: 'open', resolution: null, remote_version: version },
    ]);
    await world.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Again' } });
    await pullList(world.deps(), world.config.lists[0]!);
    expect(await conflicts(world)).toEqual([
      { local: { customer: 'Local Co' }, status: 'open', resolution: null, remote_version: version + 1 },
    ]);
    const show = await runCli(['--config', world.configFile, 'conflicts', 'show', '1'], { env: { PLATFORM_API_KEY: world.emu.apiKey } });
    expect(show.stdout).toMatch(new RegExp(`platform at ${version + 1}`));
    expect(show.stdout).toMatch(/Local Co\s+Remote Again/);
  });
});
