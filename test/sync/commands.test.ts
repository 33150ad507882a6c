import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pullList } from '../../src/sync/pull.js';
import { readState } from '../../src/store/state.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

describe('check, discover, backfill, users, status (CLI against the emulator)', () => {
  let w: World;
  let env: Record<string, string>;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 1200 }, list: { pageSize: 100 }, database: { pageWriters: 2 } });
    env = { PLATFORM_API_KEY: w.emu.apiKey };
  });
  afterAll(async () => w?.close());

  const cli = (...args: string[]) => runCli(['--config', w.configFile, ...args], { env, cwd: w.cwd });

  it('check passes against the platform, and fails with exit 2 naming a cursor field that is not indexed', async () => {
    await cli('migrate');
    const ok = await cli('check');
    expect(ok.stdout).toContain('ok   platform orders');
    expect(ok.code).toBe(0);

    const bad = JSON.parse(
      JSON.stringify({ ...w.config, lists: [{ name: 'orders', appID: 'demo', listID: 'orders', cursorField: 'Text4' }] }),
    ) as Record<string, Record<string, unknown>>;
    delete bad.platform!.apiKey;
    writeFileSync(join(w.cwd, 'notes.json'), JSON.stringify({ platform: bad.platform, database: { url: w.t.url }, lists: bad.lists }));
    const r = await runCli(['--config', 'notes.json', 'check'], { env, cwd: w.cwd });
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('lists[0].cursorField "Text4" is not indexed on the platform');
    expect(r.stdout).toMatch(/Indexed fields: .*Modified/);
  });

  it('check with a wrong API key exits 2 and says so without printing the key', async () => {
    const r = await runCli(['--config', w.configFile, 'check'], { env: { PLATFORM_API_KEY: 'wrong-key-9876' }, cwd: w.cwd });
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/FAIL platform orders: .*refused the API key/);
    expect(r.stdout + r.stderr).not.toContain('wrong-key-9876');
  });

  it('discover prints fields, display names, storage kinds, controls, columns, where their types came from, and whether indexed', async () => {
    const r = await cli('discover');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Datetime1\s+Order date\s+Datetime\s+datepicker\s+order_date\s+date\s+FieldType\s+no/);
    expect(r.stdout).toMatch(/Datetime2\s+Shipped at\s+Datetime\s+datepicker\s+shipped_at\s+timestamptz/);
    expect(r.stdout).toMatch(/Text5\s+Tags\s+Text\s+checkbox\s+tags\s+text\[\]/);
    expect(r.stdout).toMatch(/Modified\s+.*\s+modified_at\s+timestamptz\s+\S+\s+yes\s+cursor/);
    expect(r.stdout).toMatch(/ListDataID\s+.*\s+id\s+text\s+\S+\s+yes\s+id/);
  });

  it('check reads the version field from an item, and names it precisely when items lack it', async () => {
    const raw = JSON.parse(JSON.stringify(w.config)) as Record<string, Record<string, unknown>>;
    delete raw.platform!.apiKey;
    const write = (file: string, list: Record<string, unknown>) =>
      writeFileSync(
        join(w.cwd, file),
        JSON.stringify({
          platform: raw.platform,
          database: { url: w.t.url },
          lists: [{ name: 'orders', appID: 'demo', listID: 'orders', ...list }],
        }),
      );
    write('version.json', { versionField: 'Version' });
    const r = await runCli(['--config', 'version.json', 'check'], { env, cwd: w.cwd });
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/items of demo\/orders have no "Version" \(lists\[0\]\.versionField\).*version-like keys seen: RowVersion/);
  });

  it('backfill reads exactly the date range, one JSON progress line per page when not on a terminal', async () => {
    const exported = await w.emu.admin.exportList('demo', 'orders');
    const days = exported.items.map((i) => String(i.Modified).slice(0, 10)).sort();
    const from = days[Math.floor(days.length * 0.3)]!;
    const to = days[Math.floor(days.length * 0.6)]!;
    const inRange = exported.items.filter((i) => String(i.Modified).slice(0, 10) >= from && String(i.Modified).slice(0, 10) <= to);
    // Progress lines are info log lines (the tests' default level is warn).
    const r = await runCli(['--config', w.configFile, 'backfill', '--list', 'orders', '--from', from, '--to', to], {
      env: { ...env, LISTSYNC_LOG_LEVEL: 'info' },
      cwd: w.cwd,
    });
    expect(r.code).toBe(0);
    const pages = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; page: number; pageCount: number; level: string; name: string; job: string })
      .filter((l) => l.msg === 'page');
    expect(pages[0]).toMatchObject({ level: 'info', name: 'listsync', job: 'backfill' });
    expect(pages.length).toBe(Math.ceil(inRange.length / 100));
    expect(pages.at(-1)).toMatchObject({ msg: 'page', page: pages.length, pageCount: pages.length });
    expect(r.stdout).toContain(`(from ${from} to ${to})`);
    const ids = (await w.t.db('mirror.orders').pluck('id')) as string[];
    expect(new Set(ids)).toEqual(new Set(inRange.map((i) => String(i.ListDataID))));
    // A backfill does not move the incremental watermark.
    expect((await readState(w.t.db, 'orders', 'pull')).watermark).toBeNull();
  });

  it('a backfill stopped after a page resumes from its checkpoint', async () => {
    const abort = new AbortController();
    const list = w.config.lists[0]!;
    const stopped = await pullList({ ...w.deps(), signal: abort.signal, onPage: (p) => p.page === 3 && abort.abort() }, list, {
      kind: 'backfill',
      from: '2000-01-01',
    });
    expect(stopped.status).toBe('stopped');
    // The pages being written when the stop came are finished: the checkpoint is past page 3.
    const nextPage = (await readState<{ nextPage: number }>(w.t.db, 'orders', 'backfill')).checkpoint!.nextPage;
    expect(nextPage).toBeGreaterThanOrEqual(4);
    expect(nextPage).toBeLessThan(12);
    expect(stopped.counters.pages).toBe(nextPage - 1);
    await w.emu.admin.clearRequests();
    const resumed = await pullList(w.deps(), list, { kind: 'backfill', from: '2000-01-01' });
    expect(resumed.resumed).toBe(true);
    expect(resumed.counters.pages).toBe(12 - (nextPage - 1));
    const pages = (await w.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query')).map((e) => e.pageIndex);
    expect(pages).not.toContain(1);
    expect(await w.t.db('mirror.orders').count('* as n').first()).toEqual({ n: 1200 });
    // A different range starts afresh rather than resuming.
    const other = await pullList(w.deps(), list, { kind: 'backfill', from: '2001-01-01' });
    expect(other.resumed).toBe(false);
  });

  it('backfill with a bad date is a usage error (exit 2)', async () => {
    const r = await cli('backfill', '--list', 'orders', '--from', '2024-13-01');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--from must be a date like 2024-01-31');
    const unknown = await cli('pull', '--list', 'nope');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No list named "nope"');
  });

  it('users pulls the directory into platform_users; status prints the table', async () => {
    const r = await cli('users');
    expect(r.code).toBe(0);
    const users = (await w.t.db('mirror.platform_users').select('user_id', 'email')) as { user_id: string; email: string }[];
    expect(users.length).toBe(50);
    expect(users[0]!.user_id).toMatch(/^\d{19}$/);
    await cli('pull');
    const s = await cli('status');
    expect(s.code).toBe(0);
    expect(s.stdout).toMatch(/^list\s+last success\s+watermark\s+lag\s+rows/m);
    // Human output: thousands separators.
    expect(s.stdout).toMatch(/orders\s+\S+ \S+\s+\d{4}-\d{2}-\d{2}\s+\S+\s+1,200\s+0/);
    expect(s.stdout).toContain('users: last run succeeded');
  });
});
