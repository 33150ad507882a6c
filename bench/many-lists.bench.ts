/**
 * Many lists under the real `listsync serve` (a child process, default pool)
 * against the emulator in a child process (its real 10 requests/s): every
 * list scheduled `* * * * *`, for BENCH_MANY_LISTS_MINUTES (default 5), with
 * a few platform edits a minute; two shapes, 100 lists of 1,000 items and
 * 500 of 100 (BENCH_MANY_LISTS_SHAPES, e.g. "100x1000,500x100"). Reports per
 * shape: fires succeeded, skipped (by reason) and failed from sync_runs; pool
 * timeouts in serve's log; the slowest /healthz and /metrics answer over
 * probes every 3 s; seconds from a platform edit to its mirror row; serve's
 * RSS at start and end; how long SIGTERM took. The edits of the last two
 * minutes get up to two minutes more to land before serve is stopped.
 * Timings on a shared machine are noisy.
 *
 * By default the mirror is first loaded as the README's quickstart does it,
 * `listsync pull` before `serve` (its requests per list and seconds are
 * reported), and the fires counted are serve's own. BENCH_MANY_LISTS_FIRST_PULL=0
 * starts serve on an empty mirror: then the first minutes' fires are first
 * loads (2 requests a list), and 500 lists need more than the account's
 * 600 requests a minute until they are done.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MANY_LISTS_APP_ID, manyListId } from '../src/emulator/many-lists.js';
import type { Knex } from '../src/db.js';
import { benchDatabase, emulatorProcess, mb } from './support.js';

const BIN = fileURLToPath(new URL('../bin/listsync.js', import.meta.url));
const PROBE_MS = 3000;
const EDIT_EVERY_MS = 15_000;

type Figures = Record<string, string | number>;

export default async function run(): Promise<Figures> {
  const minutes = Number(process.env.BENCH_MANY_LISTS_MINUTES ?? 5);
  const shapes = (process.env.BENCH_MANY_LISTS_SHAPES ?? '100x1000,500x100')
    .split(',')
    .map((s) => s.split('x').map(Number) as [number, number]);
  const figures: Figures = {};
  for (const [lists, items] of shapes) Object.assign(figures, await shape(lists!, items!, minutes));
  return figures;
}

async function shape(lists: number, items: number, minutes: number): Promise<Figures> {
  const tag = `${lists}x${items}`;
  const emu = await emulatorProcess(['--lists', String(lists), '--items', String(items)]);
  const b = await benchDatabase(`many_${lists}`);
  const dir = mkdtempSync(join(tmpdir(), 'listsync-many-'));
  const configFile = join(dir, 'listsync.config.json');
  const names = Array.from({ length: lists }, (_, i) => manyListId(i + 1));
  writeFileSync(
    configFile,
    JSON.stringify({
      platform: { baseUrl: emu.baseUrl },
      database: { url: b.url, schema: 'mirror' },
      lists: names.map((id) => ({ name: id, appID: MANY_LISTS_APP_ID, listID: id, schedule: { pull: '* * * * *' } })),
      users: { enabled: false },
      directory: { enabled: false },
      serve: { host: '127.0.0.1', console: 'off' },
    }),
  );
  const firstPull = process.env.BENCH_MANY_LISTS_FIRST_PULL === '0' ? undefined : await firstLoad(configFile, emu.apiKey, b.db);
  const firstRunId = firstPull?.lastRunId ?? 0;
  const child = spawn(process.execPath, [BIN, '--config', configFile, 'serve', '--port', '0'], {
    env: { ...process.env, PLATFORM_API_KEY: emu.apiKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let poolTimeouts = 0;
  let logBytes = 0;
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    const text = d.toString();
    logBytes += d.length;
    poolTimeouts += text.match(/Timeout acquiring a connection/g)?.length ?? 0;
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const url = await waitFor(
      () => /listsync serve on (\S+) /.exec(out)?.[1],
      60_000,
      () => out,
    );
    const rssStart = rssOf(child.pid!);
    const admin = emu.admin;
    const ids = new Map<string, string[]>();
    const probes = { healthz: [] as number[], metrics: [] as number[], healthzStatus: new Map<number, number>() };
    const edits: { list: string; id: string; version: number; at: number; landed?: number }[] = [];
    const end = Date.now() + minutes * 60_000;
    let nextProbe = Date.now();
    let nextEdit = Date.now() + EDIT_EVERY_MS;
    let n = 0;
    while (Date.now() < end) {
      if (Date.now() >= nextProbe) {
        nextProbe += PROBE_MS;
        const h = await timed(() => fetch(`${url}/healthz`).then(async (r) => (await r.text(), r.status)));
        probes.healthz.push(h.ms);
        probes.healthzStatus.set(h.value, (probes.healthzStatus.get(h.value) ?? 0) + 1);
        probes.metrics.push((await timed(() => fetch(`${url}/metrics`).then((r) => r.text()))).ms);
      }
      if (Date.now() >= nextEdit) {
        nextEdit += EDIT_EVERY_MS;
        const list = names[(n++ * 37) % names.length]!;
        if (!ids.has(list))
          ids.set(
            list,
            (await admin.exportList(MANY_LISTS_APP_ID, list)).items.map((i) => String(i.ListDataID)),
          );
        const id = ids.get(list)![n % ids.get(list)!.length]!;
        const version = await admin.editItem(MANY_LISTS_APP_ID, list, id, { Data: { Text1: `edit ${n}` } });
        edits.push({ list, id, version, at: Date.now() });
      }
      await noteLandings(b.db, edits);
      await new Promise((r) => setTimeout(r, 500));
    }
    // The last edits get their two minutes to land (a pull a minute, a queue to wait in).
    const lastEdit = edits.at(-1)?.at ?? 0;
    while (edits.some((e) => e.landed === undefined) && Date.now() < lastEdit + 120_000) {
      await noteLandings(b.db, edits);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const rssEnd = rssOf(child.pid!);
    const stopAt = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    const stopS = (Date.now() - stopAt) / 1000;
    const runs = (await b.db.raw(
      `select status, case when status = 'skipped' then coalesce(error, '') else '' end as reason, count(*)::int as n
         from listsync.sync_runs where job = 'pull' and id > ? group by 1, 2 order by 1, 2`,
      [firstRunId],
    )) as { rows: { status: string; reason: string; n: number }[] };
    const total = runs.rows.reduce((s, r) => s + r.n, 0);
    const by = (status: string) => runs.rows.filter((r) => r.status === status).reduce((s, r) => s + r.n, 0);
    const skippedBy = runs.rows
      .filter((r) => r.status === 'skipped')
      .map((r) => `${r.reason || '(none)'}: ${r.n}`)
      .join('; ');
    const lag = edits.map((e) => (e.landed === undefined ? Infinity : (e.landed - e.at) / 1000));
    const dropped = runs.rows.filter((r) => r.status === 'skipped' && r.reason === 'shutdown').reduce((s, r) => s + r.n, 0);
    return {
      ...(firstPull
        ? {
            [`${tag}: first pull requests per list`]: Math.round((firstPull.requests / lists) * 100) / 100,
            [`${tag}: first pull s`]: Math.round(firstPull.seconds * 10) / 10,
          }
        : { [`${tag}: first load`]: 'inside serve (empty mirror)' }),
      [`${tag}: minutes`]: minutes,
      [`${tag}: fires recorded`]: total,
      [`${tag}: succeeded %`]: total ? Math.round((by('succeeded') / total) * 1000) / 10 : 0,
      [`${tag}: succeeded % of fires not dropped at the stop`]:
        total - dropped ? Math.round((by('succeeded') / (total - dropped)) * 1000) / 10 : 0,
      [`${tag}: succeeded`]: by('succeeded'),
      [`${tag}: skipped`]: by('skipped'),
      [`${tag}: skipped by reason`]: skippedBy || 'none',
      [`${tag}: failed`]: by('failed'),
      [`${tag}: left running`]: by('running'),
      [`${tag}: pool timeouts in the log`]: poolTimeouts,
      [`${tag}: log KB`]: Math.round(logBytes / 1024),
      [`${tag}: max /healthz ms`]: Math.round(Math.max(0, ...probes.healthz)),
      [`${tag}: /healthz answers by status`]: [...probes.healthzStatus].map(([s, c]) => `${s}: ${c}`).join(', '),
      [`${tag}: max /metrics ms`]: Math.round(Math.max(0, ...probes.metrics)),
      [`${tag}: edits`]: edits.length,
      [`${tag}: edits in the mirror`]: edits.filter((e) => e.landed !== undefined).length,
      [`${tag}: max s edit to mirror`]: edits.length ? Math.round(Math.max(...lag) * 10) / 10 : 'no edit',
      [`${tag}: RSS start MB`]: rssStart,
      [`${tag}: RSS end MB`]: rssEnd,
      [`${tag}: s to exit on SIGTERM`]: Math.round(stopS * 10) / 10,
      [`${tag}: exit code`]: code ?? 'signal',
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await emu.stop();
    await b.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The operator's first step (README quickstart): one `listsync pull` of every list before serve. */
async function firstLoad(configFile: string, apiKey: string, db: Knex): Promise<{ requests: number; seconds: number; lastRunId: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, '--config', configFile, 'pull'], {
    env: { ...process.env, PLATFORM_API_KEY: apiKey },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (code !== 0) throw new Error(`the first listsync pull exited ${code}: ${err}`);
  const seconds = (performance.now() - t0) / 1000;
  const r = (await db.raw(
    `select coalesce(sum(requests), 0)::int as requests, coalesce(max(id), 0)::int as last from listsync.sync_runs`,
  )) as {
    rows: { requests: number; last: number }[];
  };
  return { requests: r.rows[0]!.requests, seconds, lastRunId: r.rows[0]!.last };
}

async function noteLandings(db: Knex, edits: { list: string; id: string; version: number; landed?: number }[]): Promise<void> {
  for (const e of edits.filter((x) => x.landed === undefined)) {
    const row = (await db.raw(`select row_version from mirror.${e.list} where id = ?`, [e.id]).catch(() => ({ rows: [] }))) as {
      rows: { row_version: number }[];
    };
    if (Number(row.rows[0]?.row_version ?? 0) >= e.version) e.landed = Date.now();
  }
}

function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb ? mb(Number(kb) * 1024) : NaN;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

async function waitFor<T>(fn: () => T | undefined, timeoutMs: number, say: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`serve did not start: ${say()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
