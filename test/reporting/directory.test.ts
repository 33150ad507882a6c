/**
 * The organization directory: departments, groups with their members and
 * positions, from the emulator's seed over HTTP into real Postgres tables.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pullDirectory } from '../../src/sync/directory-sync.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const rows = async <T>(world: World, sql: string): Promise<T[]> => ((await world.t.db.raw(sql)) as { rows: T[] }).rows;

describe('directory', () => {
  it('fills the directory tables from the seed; a second run changes nothing', async () => {
    w = await startWorld({ emulator: { items: 5 } });
    const r = await runCli(['--config', w.configFile, 'directory'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('mirror.platform_departments: inserted 6');

    const departments = await rows<{ department_id: string; name: string; parent_id: string; manager: string; raw: { Name: string } }>(
      w,
      'select department_id, name, parent_id, manager, _raw as raw from mirror.platform_departments order by department_id',
    );
    expect(departments.map((d) => d.name)).toEqual(['Company', 'Sales', 'Operations', 'Finance', 'Support', 'Engineering']);
    expect(departments[0]).toMatchObject({ department_id: '100', parent_id: '0' });
    expect(departments.slice(1).every((d) => d.parent_id === '100' && d.manager !== null)).toBe(true);
    expect(departments[1]!.raw.Name).toBe('Sales');

    const groups = await rows<{ group_id: string; name: string }>(w, 'select group_id, name from mirror.platform_groups order by group_id');
    expect(groups.map((g) => g.name)).toEqual(['Everyone', 'Approvers', 'Auditors']);
    const members = await rows<{ group_id: string; n: string }>(
      w,
      'select group_id, count(*)::text as n from mirror.platform_group_members group by group_id order by group_id',
    );
    const users = (await w.client.searchUsers({ pageIndex: 1, pageSize: 1000 })).totalCount;
    expect(members.find((m) => m.group_id === '200')?.n).toBe(String(users));
    expect(members.find((m) => m.group_id === '202')).toBeUndefined();
    const member = (
      await rows<{ user_id: string; name: string }>(
        w,
        `select user_id, name from mirror.platform_group_members where group_id = '201' limit 1`,
      )
    )[0]!;
    expect(member.user_id).toMatch(/^\d+$/);
    expect(member.name).toBeTruthy();
    const positions = await rows<{ name: string }>(w, 'select name from mirror.platform_positions order by position_id');
    expect(positions.map((p) => p.name)).toEqual(['Director', 'Manager', 'Specialist', 'Assistant']);

    const synced = await rows<{ at: Date }>(w, 'select max(_synced_at) as at from mirror.platform_group_members');
    const second = await pullDirectory(w.deps());
    expect(second.counters.rows_inserted + second.counters.rows_updated + second.counters.rows_deleted).toBe(0);
    expect(second.counters.rows_unchanged).toBeGreaterThan(0);
    expect(await rows<{ at: Date }>(w, 'select max(_synced_at) as at from mirror.platform_group_members')).toEqual(synced);
    const comment = await rows<{ c: string }>(w, `select obj_description('mirror.platform_departments'::regclass, 'pg_class') as c`);
    expect(comment[0]!.c).toContain('departments');
  });

  it('skips a part the platform does not have, says so once, and mirrors the rest', async () => {
    w = await startWorld({
      emulator: {
        items: 5,
        sample: true,
        seed: { directory: { departments: [{ DepartmentID: '1', Name: 'Root', ParentID: '0', Manager: '' }], groups: [] } },
      },
    });
    const first = await pullDirectory(w.deps());
    expect(Object.keys(first.skipped)).toEqual(['positions']);
    expect(first.skipped.positions).toBe('HTTP 404');
    expect(await rows<{ name: string }>(w, 'select name from mirror.platform_departments')).toEqual([{ name: 'Root' }]);
    expect((await rows<{ t: string | null }>(w, `select to_regclass('mirror.platform_positions')::text as t`))[0]!.t).toBeNull();
    const warnings = () => w!.logs.filter((l) => l.includes('the platform has no positions directory')).length;
    expect(warnings()).toBe(1);
    const second = await pullDirectory(w.deps());
    expect(second.skipped.positions).toBe('HTTP 404');
    expect(warnings()).toBe(1);
    const run = await rows<{ status: string }>(w, `select status from listsync.sync_runs where job = 'directory' order by id`);
    expect(run.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
  });
});
