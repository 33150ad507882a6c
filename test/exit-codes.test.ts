/**
 * Exit codes mean one thing for every command: 0 success; 2 what the user gave is wrong
 * (usage, config, a refused API key) or a step the message names must come first (pull,
 * migrate, settle another change); 1 something failed at run time (database or platform
 * unreachable, a run failed). Through the real CLI.
 */
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startWorld, type World } from './helpers/world.js';
import { acquireLock, listLockName, type HeldLock } from '../src/sync/lock.js';
import { SAMPLE_FIELDS as F } from '../src/emulator/index.js';

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('exit codes', () => {
  let w: World;
  let files: Record<
    'good' | 'dbDown' | 'platformDown' | 'noSuchDb' | 'unmigrated' | 'wrongList' | 'unindexed' | 'unpulled' | 'noCapture' | 'remoteWins',
    string
  >;
  let empty: TestDatabase;
  /** Migrated, then the change-capture function dropped by hand. */
  let noCapture: TestDatabase;
  let held: HeldLock | undefined;
  const GOOD = () => ({ PLATFORM_API_KEY: w.emu.apiKey });
  const REFUSED = { PLATFORM_API_KEY: 'REFUSED-KEY-1234' };
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 30 } });
    const dead = await closedPort();
    empty = await createTestDatabase({ migrated: false });
    noCapture = await createTestDatabase();
    await noCapture.db.raw('drop function listsync.mirror_capture() cascade');
    const orders = { name: 'orders', appID: 'demo', listID: 'orders' };
    const write = (name: string, platform: string, db: string, list: Record<string, unknown> = orders) => {
      const file = join(w.cwd, name);
      writeFileSync(
        file,
        JSON.stringify({
          platform: { baseUrl: platform, retries: 0, timeoutMs: 2000 },
          database: { url: db },
          lists: [list],
          serve: { console: '127.0.0.1:0' },
        }),
      );
      return file;
    };
    const noSuchDb = new URL(w.t.url);
    noSuchDb.pathname = '/listsync_no_such_database';
    files = {
      good: write('good.json', w.emu.baseUrl, w.t.url),
      dbDown: write('db-down.json', w.emu.baseUrl, `postgres://postgres@127.0.0.1:${dead}/nope`),
      platformDown: write('platform-down.json', `http://127.0.0.1:${dead}/v1`, w.t.url),
      noSuchDb: write('no-such-db.json', w.emu.baseUrl, noSuchDb.toString()),
      unmigrated: write('unmigrated.json', w.emu.baseUrl, empty.url),
      wrongList: write('wrong-list.json', w.emu.baseUrl, w.t.url, { ...orders, listID: 'no-such-list' }),
      // Shipped at: a field of the list, not indexed.
      unindexed: write('unindexed.json', w.emu.baseUrl, w.t.url, { ...orders, cursorField: 'Datetime2' }),
      // A list of the config never pulled: no mirror table yet.
      unpulled: write('unpulled.json', w.emu.baseUrl, w.t.url, { ...orders, name: 'unpulled' }),
      noCapture: write('no-capture.json', w.emu.baseUrl, noCapture.url),
      remoteWins: write('remote-wins.json', w.emu.baseUrl, w.t.url, { ...orders, conflictPolicy: 'remote-wins' }),
    };
    // A mirror table for push/reconcile/status.
    expect((await runCli(['--config', files.good, 'pull'], { env: GOOD(), cwd: w.cwd })).code).toBe(0);
  });
  afterAll(async () => {
    await held?.release();
    await empty?.drop();
    await noCapture?.drop();
    await w?.close();
  });

  const MIGRATE = /run `listsync migrate`/;
  const NO_DB = /database "listsync_no_such_database" does not exist/;
  const cases: [string, () => [string, string[], Record<string, string>], number, RegExp?][] = [
    ['unknown option', () => [files.good, ['pull', '--bogus'], GOOD()], 2],
    ['unknown list', () => [files.good, ['pull', '--list', 'nope'], GOOD()], 2],
    ['missing config file', () => [join(w.cwd, 'none.json'), ['status'], GOOD()], 2],
    ['check ok', () => [files.good, ['check'], GOOD()], 0],
    ['check, database down', () => [files.dbDown, ['check'], GOOD()], 1],
    ['check, platform down', () => [files.platformDown, ['check'], GOOD()], 1],
    ['check, refused key', () => [files.good, ['check'], REFUSED], 2],
    ['discover, platform down', () => [files.platformDown, ['discover'], GOOD()], 1],
    ['discover, refused key', () => [files.good, ['discover'], REFUSED], 2],
    ['pull, database down', () => [files.dbDown, ['pull'], GOOD()], 1],
    ['pull, platform down', () => [files.platformDown, ['pull'], GOOD()], 1],
    ['pull, refused key', () => [files.good, ['pull'], REFUSED], 2],
    ['backfill, bad date', () => [files.good, ['backfill', '--list', 'orders', '--from', 'yesterday'], GOOD()], 2],
    ['push, database down', () => [files.dbDown, ['push'], GOOD()], 1],
    ['push ok', () => [files.good, ['push'], GOOD()], 0],
    ['reconcile, platform down', () => [files.platformDown, ['reconcile'], GOOD()], 1],
    ['reconcile, refused key', () => [files.good, ['reconcile'], REFUSED], 2],
    ['users, platform down', () => [files.platformDown, ['users'], GOOD()], 1],
    ['users, refused key', () => [files.good, ['users'], REFUSED], 2],
    ['status ok', () => [files.good, ['status'], GOOD()], 0],
    ['status, database down', () => [files.dbDown, ['status'], GOOD()], 1],
    ['migrate, database down', () => [files.dbDown, ['migrate'], GOOD()], 1],
    ['conflicts, bad id', () => [files.good, ['conflicts', 'show', 'x'], GOOD()], 2],
    // listsync's tables missing: every command that needs them says to migrate.
    ...(['pull', 'push', 'reconcile', 'users', 'status', 'serve', 'conflicts', 'hooks list'] as const).map(
      (cmd): (typeof cases)[number] => [`${cmd}, tables missing`, () => [files.unmigrated, cmd.split(' '), GOOD()], 2, MIGRATE],
    ),
    ['check, tables missing', () => [files.unmigrated, ['check'], GOOD()], 2, /run "listsync migrate"/],
    // A database that does not exist is the config's fault.
    ...(['pull', 'status', 'check', 'migrate', 'serve'] as const).map((cmd): (typeof cases)[number] => [
      `${cmd}, no such database`,
      () => [files.noSuchDb, [cmd], GOOD()],
      2,
      NO_DB,
    ]),
    // A list the platform does not have, a cursor field it cannot filter on: 2 in every command, as in check.
    // (push with nothing pending asks the platform nothing: it succeeds.)
    ...(['check', 'pull', 'backfill --list orders --from 2024-01-01', 'reconcile'] as const).map((cmd): (typeof cases)[number] => [
      `${cmd}, wrong listID`,
      () => [files.wrongList, cmd.split(' '), GOOD()],
      2,
      /lists\[0\]\.listID/,
    ]),
    // (reconcile and push never filter on the cursor field: they run.)
    ...(['check', 'pull', 'backfill --list orders --from 2024-01-01'] as const).map((cmd): (typeof cases)[number] => [
      `${cmd}, cursor field not indexed`,
      () => [files.unindexed, cmd.split(' '), GOOD()],
      2,
      /cursorField "Datetime2" is not indexed/,
    ]),
    ['pull that gives way to a running one', () => [files.good, ['pull'], GOOD()], 0, /orders: pull skipped: .* is already running/],
    // A step the operator must take first.
    ['reconcile, list never pulled', () => [files.unpulled, ['reconcile'], GOOD()], 2, /run listsync pull first/],
    ['pull, change capture missing', () => [files.noCapture, ['pull'], GOOD()], 2, /Run "listsync migrate" first/],
  ];

  for (const [name, make, code, says] of cases) {
    it(`${name} exits ${code}`, async () => {
      const [file, args, env] = make();
      if (name.includes('gives way')) held = await acquireLock(w.t.db, listLockName('orders'));
      try {
        const r = await runCli(['--config', file, ...args], { env, cwd: w.cwd });
        expect(r.code, r.stdout + r.stderr).toBe(code);
        if (code !== 0) expect((r.stdout + r.stderr).trim().length).toBeGreaterThan(0);
        if (says) expect(r.stdout + r.stderr).toMatch(says);
      } finally {
        await held?.release();
        held = undefined;
      }
    });
  }

  it('records the runs stopped for a step to take first as failed, with the message', async () => {
    const reconcile = (await w.t.db('listsync.sync_runs').where({ list_name: 'unpulled', job: 'reconcile' }).first('status', 'error')) as
      { status: string; error: string } | undefined;
    expect(reconcile).toMatchObject({ status: 'failed', error: expect.stringMatching(/run listsync pull first/) });
    const pull = (await noCapture.db('listsync.sync_runs').where({ job: 'pull' }).first('status', 'error')) as
      { status: string; error: string } | undefined;
    expect(pull).toMatchObject({ status: 'failed', error: expect.stringMatching(/Run "listsync migrate" first/) });
  });

  it('conflicts resolve --keep local while a newer change of the item is open exits 2: settle that one first', async () => {
    const { id } = (await w.t.db('mirror.orders').orderBy('id').first('id')) as { id: string };
    await w.t.db('mirror.orders').where({ id }).update({ notes: 'local edit' });
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.notes]: 'platform edit' } });
    await runCli(['--config', files.remoteWins, 'push'], { env: GOOD(), cwd: w.cwd });
    const conflict = (await w.t.db('listsync.conflicts').where({ item_id: id, resolution: 'remote-wins' }).first('id')) as { id: number };
    expect(conflict).toBeDefined();
    await w.t.db('mirror.orders').where({ id }).update({ notes: 'a newer edit' });
    const r = await runCli(['--config', files.remoteWins, 'conflicts', 'resolve', String(conflict.id), '--keep', 'local'], {
      env: GOOD(),
      cwd: w.cwd,
    });
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/has a newer local change \(outbox \d+\) that the next push sends; settle that one first/);
    const open = await w.t.db('listsync.outbox').where({ item_id: id, status: 'pending' }).pluck('changes');
    expect(open).toEqual([{ notes: 'a newer edit' }]);
  });

  it('records the pull that gave way as skipped', async () => {
    const skipped = await w.t.db('listsync.sync_runs').where({ list_name: 'orders', job: 'pull', status: 'skipped' }).count({ n: '*' });
    expect(Number(skipped[0]!.n)).toBeGreaterThan(0);
  });

  it('serve --migrate migrates tables that are missing, then starts', async () => {
    const r = await runCli(['--config', files.unmigrated, 'serve', '--migrate', '--port', '0'], {
      env: GOOD(),
      cwd: w.cwd,
      timeoutMs: 20_000,
      stopOn: /listsync serve on/,
    });
    expect(r.stdout, r.stderr).toMatch(/listsync serve on http/);
    const [applied] = (await empty.db('listsync.knex_migrations').count({ n: '*' })) as { n: number }[];
    expect(applied!.n).toBeGreaterThan(5);
    expect((await runCli(['--config', files.unmigrated, 'status'], { env: GOOD(), cwd: w.cwd })).code).toBe(0);
  });
});
