/**
 * A conflict holds the user's latest edit: after a push killed between the
 * platform applying a PATCH and its answer, a platform edit and a second SQL
 * edit, what the conflict records (and what local-wins or `resolve --keep
 * local` sends) is the second edit, never the one already delivered; nothing
 * goes out with RowVersion 0 but under local-wins. Real PostgreSQL, the
 * emulator over HTTP, the push killed in a child process.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { BIN, childEnv, runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const fast = { rereadDelaysMs: [10, 20] };
/** After a killed push: its lock goes when PostgreSQL notices the connection is gone, which may take a moment. */
const afterKill = { ...fast, waitMs: 30_000 };
type Policy = 'remote-wins' | 'manual' | 'local-wins';

const item = async (world: World, id: string) =>
  (await world.emu.admin.exportList('demo', 'orders')).items.find((i) => String(i.ListDataID) === id)!;
const patches = async (world: World) =>
  (await world.emu.admin.requests())
    .filter((e) => e.method === 'PATCH')
    .map((p) => JSON.parse(p.body!) as { RowVersion: number; Data: Record<string, string> });

/** Row A edited to 'round1' and pushed by a child process killed after the platform applied the PATCH, before its answer. */
async function killedWrite(policy: Policy, conflictScope: 'field' | 'item' = 'field'): Promise<{ world: World; id: string; base: number }> {
  w = await startWorld({ emulator: { items: 5 }, list: { conflictPolicy: policy, conflictScope } });
  const world = w;
  const list = world.config.lists[0]!;
  await pullList(world.deps(), list);
  const { id, row_version: base } = (await world.t.db('mirror.orders').orderBy('id').first('id', 'row_version')) as {
    id: string;
    row_version: number;
  };
  await world.t.db('mirror.orders').where({ id }).update({ notes: 'round1' });
  await world.emu.admin.setFaults({ updateAnswerDelayMs: 60_000 });
  const child = spawn(process.execPath, [BIN, '--config', world.configFile, 'push'], {
    env: childEnv({ PLATFORM_API_KEY: world.emu.apiKey }),
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.once('exit', r));
  const deadline = Date.now() + 30_000;
  while ((await item(world, id))[F.notes] !== 'round1') {
    if (Date.now() > deadline) throw new Error('the PATCH never reached the platform');
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill('SIGKILL');
  await exited;
  await world.emu.admin.setFaults({ updateAnswerDelayMs: 0 });
  expect(((await world.t.db('listsync.outbox').first('status')) as { status: string }).status).toBe('sending');
  // A platform user edits Notes; the user edits the row again in SQL.
  await world.emu.admin.editItem('demo', 'orders', id, { Data: { [F.notes]: 'platform edit' } });
  await world.t.db('mirror.orders').where({ id }).update({ notes: 'edit2' });
  await world.emu.admin.clearRequests();
  return { world, id, base };
}

const conflictRows = (world: World) =>
  world.t.db('listsync.conflicts').orderBy('id').select('id', 'local', 'status', 'resolution', 'remote_version') as Promise<
    { id: number; local: Record<string, unknown>; status: string; resolution: string | null; remote_version: number }[]
  >;

async function resolveKeepLocal(world: World, conflictId: number, platformVersion: number, id: string): Promise<void> {
  const env = { PLATFORM_API_KEY: world.emu.apiKey };
  await world.emu.admin.clearRequests();
  // Keep local sends at once (a list with no push schedule is not left waiting).
  const resolved = await runCli(['--config', world.configFile, 'conflicts', 'resolve', String(conflictId), '--keep', 'local'], { env });
  expect(resolved.code, resolved.stderr).toBe(0);
  expect(resolved.stdout).toMatch(/sent at the platform's version \d+ and applied/);
  expect(await patches(world)).toEqual([{ RowVersion: platformVersion, Data: { [F.notes]: 'edit2' } }]);
  expect((await item(world, id))[F.notes]).toBe('edit2');
  const r = await pushList({ ...world.deps(), ...fast }, world.config.lists[0]!);
  expect(r).toMatchObject({ applied: 0, conflicts: 0, failed: 0 });
}

describe('a push killed after the platform applied its PATCH, then edits on both sides', () => {
  for (const policy of ['remote-wins', 'manual'] as const) {
    it(`${policy}: the conflict holds edit2, nothing is sent with RowVersion 0, and resolve --keep local sends edit2 with the platform's version`, async () => {
      const { world, id, base } = await killedWrite(policy);
      const platformVersion = Number((await item(world, id)).RowVersion);
      expect(platformVersion).toBe(base + 2);
      const r = await pushList({ ...world.deps(), ...afterKill }, world.config.lists[0]!);
      expect(r).toMatchObject({ conflicts: 1, applied: 0, failed: 0 });
      expect((await patches(world)).filter((p) => p.RowVersion === 0)).toEqual([]);
      expect((await item(world, id))[F.notes]).toBe('platform edit');
      const [c] = await conflictRows(world);
      expect(c).toMatchObject({ local: { notes: 'edit2' }, remote_version: platformVersion });
      expect(c!.status).toBe(policy === 'manual' ? 'open' : 'resolved');
      if (policy === 'manual') {
        const shown = await runCli(['--config', world.configFile, 'conflicts', 'show', String(c!.id)], {
          env: { PLATFORM_API_KEY: world.emu.apiKey },
        });
        expect(shown.stdout).toMatch(/edit2/);
        expect(shown.stdout).not.toMatch(/round1/);
      }
      await resolveKeepLocal(world, c!.id, platformVersion, id);
    });
  }

  it('local-wins, conflictScope item: edit2 goes out with RowVersion 0, the only write with it', async () => {
    const { world, id } = await killedWrite('local-wins', 'item');
    const r = await pushList({ ...world.deps(), ...afterKill }, world.config.lists[0]!);
    expect(r).toMatchObject({ conflicts: 1, failed: 0 });
    const sent = await patches(world);
    expect(sent.filter((p) => p.RowVersion === 0)).toEqual([{ RowVersion: 0, Data: { [F.notes]: 'edit2' } }]);
    expect(sent.map((p) => p.Data[F.notes])).not.toContain('round1');
    expect((await item(world, id))[F.notes]).toBe('edit2');
    const [c] = await conflictRows(world);
    expect(c).toMatchObject({ local: { notes: 'edit2' }, resolution: 'local-wins' });
    expect(await world.t.db('listsync.outbox').whereIn('status', ['pending', 'sending', 'conflict'])).toEqual([]);
  });
});

describe('a push killed after the platform applied its PATCH, then edits on both sides (field by field)', () => {
  it("local-wins: edit2 goes out at the platform's version, never with RowVersion 0", async () => {
    const { world, id } = await killedWrite('local-wins');
    const platformVersion = Number((await item(world, id)).RowVersion);
    const r = await pushList({ ...world.deps(), ...afterKill }, world.config.lists[0]!);
    expect(r).toMatchObject({ conflicts: 1, failed: 0, settledByPolicy: 1 });
    const sent = await patches(world);
    expect(sent.filter((p) => p.RowVersion === 0)).toEqual([]);
    expect(sent.at(-1)).toEqual({ RowVersion: platformVersion, Data: { [F.notes]: 'edit2' } });
    expect(sent.map((p) => p.Data[F.notes])).not.toContain('round1');
    expect((await item(world, id))[F.notes]).toBe('edit2');
    const [c] = await conflictRows(world);
    expect(c).toMatchObject({ local: { notes: 'edit2' }, resolution: 'local-wins' });
    expect(await world.t.db('listsync.outbox').whereIn('status', ['pending', 'sending', 'conflict'])).toEqual([]);
  });
});

describe('a write whose answer timed out', () => {
  it('every PATCH answered after 12 s with timeoutMs 10,000: each change is read by ID and sent at most twice, and ends applied', async () => {
    w = await startWorld({ emulator: { items: 10 }, platform: { timeoutMs: 10_000 } });
    const world = w;
    const list = world.config.lists[0]!;
    await pullList(world.deps(), list);
    const ids = (await world.t.db('mirror.orders').orderBy('id').limit(4).pluck('id')) as string[];
    await world.t.db.raw(`update mirror.orders set notes = 'slow ' || right(id, 4) where id = any(?)`, [ids]);
    await world.emu.admin.setFaults({ updateAnswerDelayMs: 12_000 });
    await world.emu.admin.clearRequests();
    const r = await pushList({ ...world.deps(), ...fast }, list);
    await world.emu.admin.setFaults({ updateAnswerDelayMs: 0 });
    expect(r).toMatchObject({ applied: 4, failed: 0, conflicts: 0, retrying: 0 });
    const requests = await world.emu.admin.requests();
    for (const id of ids) {
      expect(requests.filter((e) => e.method === 'PATCH' && e.path.endsWith(`/${id}`)).length, `PATCHes of ${id}`).toBeLessThanOrEqual(2);
      expect(requests.filter((e) => e.method === 'GET' && e.path.endsWith(`/${id}`)).length, `reads of ${id}`).toBeGreaterThanOrEqual(1);
      expect((await item(world, id))[F.notes]).toBe(`slow ${id.slice(-4)}`);
    }
  }, 120_000);
});
