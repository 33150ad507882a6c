import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { jobs } from '../jobs/index.js';
import { SAMPLE_FIELDS as F } from '../src/emulator/index.js';
import { startServe } from '../src/serve/start-serve.js';
import { pullList } from '../src/sync/pull.js';
import { pushList } from '../src/sync/push.js';
import { USERS_JOB_LIST } from '../src/sync/users.js';
import { BIN, childEnv } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('serve', () => {
  it('two replicas: each scheduled fire runs once', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    const config = { ...w.config, users: { ...w.config.users, schedule: '* * * * * *' } };
    const usersOnly = jobs.filter((j) => j.name === 'users');
    const a = await startServe({ ...w.deps(), config, jobs: usersOnly, port: 0, host: '127.0.0.1' });
    const b = await startServe({ ...w.deps(), config, jobs: usersOnly, port: 0, host: '127.0.0.1' });
    await new Promise((r) => setTimeout(r, 3500));
    await Promise.all([a.close(), b.close()]);
    const sent = (
      await w.t.db.raw(
        `select count(*)::int as jobs, count(distinct data->>'firedAt')::int as fires from (
           select data from listsync_jobs.job where singleton_key = 'users' union all select data from listsync_jobs.archive where singleton_key = 'users') j`,
      )
    ).rows[0] as { jobs: number; fires: number };
    const runs = (await w.t.db('listsync.sync_runs').where({ list_name: USERS_JOB_LIST })) as { status: string; job_id: string }[];
    // Both replicas fired every second; each fire made one job, and each job ran once: no run skipped for a busy lock.
    expect(sent.fires).toBeGreaterThanOrEqual(2);
    expect(sent.jobs).toBe(sent.fires);
    expect(runs.length).toBeGreaterThanOrEqual(sent.jobs - 1);
    expect(new Set(runs.map((r) => r.job_id)).size).toBe(runs.length);
    expect(runs.every((r) => r.status === 'succeeded')).toBe(true);
  });

  it('/healthz reports the database and the last run per list', async () => {
    w = await startWorld({ emulator: { items: 30 } });
    const s = await startServe({ jobs, ...w.deps(), port: 0, host: '127.0.0.1', schedule: false });
    try {
      await s.runNow('pull', 'orders');
      const res = await fetch(`${s.url}/healthz`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        status: string;
        database: string;
        lists: { list: string; lastRunStatus: string; watermark: string }[];
      };
      expect(body.status).toBe('ok');
      expect(body.database).toBe('ok');
      expect(body.lists[0]).toMatchObject({ list: 'orders', lastRunStatus: 'succeeded' });
      expect(body.lists[0]!.watermark).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect((await fetch(`${s.url}/nope`)).status).toBe(404);
    } finally {
      await s.close();
    }
  });

  it('SIGTERM while a pull pages: the page in flight finishes, the run is closed, locks released, exit 0', async () => {
    w = await startWorld({
      emulator: { items: 4000, faults: { latencyMs: 200 } },
      list: { pageSize: 100, schedule: { pull: '* * * * * *' } },
      platform: { requestsPerSecond: 10, maxInFlight: 2 },
    });
    await w.t.db.raw('select 1');
    const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'serve', '--port', '0'], {
      env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    let pages = 0;
    for (let i = 0; i < 300 && pages < 3; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const row = (await w.t.db('listsync.sync_runs').where({ job: 'pull', status: 'running' }).first()) as { pages: number } | undefined;
      pages = row?.pages ?? 0;
    }
    expect(pages).toBeGreaterThanOrEqual(3);
    child.kill('SIGTERM');
    const code = await exited;
    expect(code, out).toBe(0);
    expect(out).toContain('listsync serve stopped');
    const runs = (await w.t.db('listsync.sync_runs').where({ job: 'pull' }).orderBy('id')) as { status: string; error: string | null }[];
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
    // Fires that came while the pull ran were skipped (coalesced) with their reason, never stacked.
    const ran = runs.filter((r) => r.status !== 'skipped');
    expect(runs.filter((r) => r.status === 'skipped').every((r) => /^coalesced: /.test(r.error ?? ''))).toBe(true);
    expect(ran.at(-1)!.error ?? '').toMatch(/^$|stopped by shutdown/);
    const locks = await w.t.db.raw(
      "select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())",
    );
    expect((locks.rows as { n: number }[])[0]!.n).toBe(0);
  });
  it('SIGTERM during a long push: it stops between changes, exits promptly, and the next push sends the rest once', async () => {
    w = await startWorld({ emulator: { items: 400 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const before = new Map((await w.emu.admin.exportList('demo', 'orders')).items.map((i) => [String(i.ListDataID), Number(i.RowVersion)]));
    await w.t.db.raw(`update mirror.orders set customer = 'Shutdown ' || right(id, 4)`);
    expect(await w.t.db('listsync.outbox').count('* as n').first()).toEqual({ n: 400 });
    // A push of 400 changes at 10 requests a second takes 40 s; the shutdown timeout (60 s) would let it all run.
    const raw = JSON.parse(readFileSync(w.configFile, 'utf8')) as Record<string, Record<string, unknown>>;
    writeFileSync(
      w.configFile,
      JSON.stringify({
        ...raw,
        platform: { ...raw.platform, requestsPerSecond: 10, maxInFlight: 2 },
        serve: { ...raw.serve, shutdownTimeoutMs: 60_000 },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', schedule: { push: '* * * * * *' } }],
      }),
    );
    await w.emu.admin.setFaults({ latencyMs: 100 });
    const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'serve', '--port', '0'], {
      env: childEnv({ PLATFORM_API_KEY: w.emu.apiKey }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    let applied = 0;
    for (let i = 0; i < 300 && applied < 10; i++) {
      await new Promise((r) => setTimeout(r, 100));
      applied = Number(
        ((await w.t.db('listsync.outbox').where({ status: 'applied' }).count('* as n').first()) as { n: string | number }).n,
      );
    }
    expect(applied, out).toBeGreaterThanOrEqual(10);
    const signalledAt = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    const stopMs = Date.now() - signalledAt;
    expect(code, out).toBe(0);
    expect(stopMs, 'serve waited for the whole push').toBeLessThan(10_000);

    // The run is closed as stopped; what was not sent is pending, nothing is left half-sent.
    const runs = (await w.t.db('listsync.sync_runs').where({ job: 'push' }).orderBy('id')) as {
      status: string;
      error: string | null;
      changes_applied: number;
    }[];
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
    expect(runs.filter((r) => r.status !== 'skipped').at(-1)).toMatchObject({
      status: 'interrupted',
      error: 'stopped by shutdown; unsent changes stay pending',
    });
    const sentBefore = runs.reduce((n, r) => n + Number(r.changes_applied), 0);
    expect(sentBefore).toBeGreaterThanOrEqual(10);
    expect(sentBefore).toBeLessThan(400);
    const open = (await w.t.db('listsync.outbox').whereNot({ status: 'applied' }).pluck('status')) as string[];
    expect(new Set(open)).toEqual(new Set(['pending']));
    expect(open.length).toBe(400 - sentBefore);

    // The next push sends the rest: every item carries the edit, each version moved by exactly one.
    await w.emu.admin.setFaults({ latencyMs: 0 });
    const rest = await pushList(w.deps(), list);
    expect(rest).toMatchObject({ applied: 400 - sentBefore, conflicts: 0, failed: 0, stopped: false });
    const items = (await w.emu.admin.exportList('demo', 'orders')).items;
    expect(items.filter((i) => !String(i[F.customer]).startsWith('Shutdown '))).toEqual([]);
    expect(items.filter((i) => Number(i.RowVersion) !== before.get(String(i.ListDataID))! + 1).map((i) => i.ListDataID)).toEqual([]);
    expect(await w.t.db('listsync.outbox').whereNot({ status: 'applied' }).count('* as n').first()).toEqual({ n: 0 });
  });
});
