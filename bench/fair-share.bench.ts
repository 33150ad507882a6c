/**
 * Fair sharing of the account's budget: a 200,000-item backfill runs in one
 * process (`listsync backfill`, a child) while another process (this one)
 * pushes 100 changes of another list on the same account, both pacing through
 * the budget shared in Postgres, against the emulator's real limit (10
 * requests/s) at 200 ms latency. Bar (issue 26): the push's first PATCH
 * leaves within 2 s of the push starting. Also printed: the push's PATCH/s
 * while the backfill runs, and what the server saw in its busiest second.
 *
 * The push is on a second mirror of the same platform list (`orders_b`): a
 * list's jobs take its lock, so a push of the list being backfilled would
 * wait for the backfill by design.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../src/config.js';
import { silentLogger } from '../src/logger.js';
import { pullList } from '../src/sync/pull.js';
import { pushList } from '../src/sync/push.js';
import { benchClient, benchDatabase, emulatorProcess } from './support.js';

const BIN = fileURLToPath(new URL('../bin/listsync.js', import.meta.url));

export default async function run(): Promise<Record<string, string | number>> {
  const items = 200_000;
  const changes = 100;
  const emu = await emulatorProcess(['--items', String(items), '--latency', '200']);
  const admin = emu.admin;
  const b = await benchDatabase('fairshare');
  const dir = mkdtempSync(join(tmpdir(), 'listsync-fairshare-'));
  const raw = {
    platform: { baseUrl: emu.baseUrl },
    database: { url: b.url, schema: 'mirror' },
    lists: [
      { name: 'orders', appID: 'demo', listID: 'orders' },
      { name: 'orders_b', appID: 'demo', listID: 'orders', table: 'orders_b' },
    ],
  };
  const configFile = join(dir, 'listsync.config.json');
  writeFileSync(configFile, JSON.stringify(raw));
  const config = parseConfig({ ...raw, platform: { ...raw.platform, apiKey: emu.apiKey } });
  const client = benchClient(config, b.db);
  const deps = { db: b.db, client, config, logger: silentLogger() };
  const pushed = config.lists[1]!;
  let backfill: ReturnType<typeof spawn> | undefined;
  try {
    // The pushed list's mirror: one day of items, then 100 of them edited with SQL.
    const day = String((await admin.exportList('demo', 'orders')).items.at(-1)!.Modified).slice(0, 10);
    await pullList(deps, pushed, { kind: 'backfill', from: day, to: day });
    await b.db.raw(
      `update mirror.orders_b set notes = 'fair ' || id where id in (select id from mirror.orders_b order by id limit ${changes})`,
    );

    backfill = spawn(process.execPath, [BIN, '--config', configFile, 'backfill', '--list', 'orders', '--from', '2000-01-01'], {
      env: { ...process.env, PLATFORM_API_KEY: emu.apiKey, LISTSYNC_LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    });
    // The backfill is in full flow: pages are being committed.
    for (;;) {
      const row = (await b.db('listsync.sync_runs').where({ job: 'backfill', list_name: 'orders' }).first('pages')) as
        { pages: number } | undefined;
      if ((row?.pages ?? 0) >= 5) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await admin.clearRequests();
    const started = Date.now();
    const r = await pushList(deps, pushed);
    const seconds = (Date.now() - started) / 1000;
    const log = await admin.requests();
    const patches = log.filter((e) => e.method === 'PATCH').sort((x, y) => x.startedAt - y.startedAt);
    const queries = log.filter((e) => e.path.endsWith('/items/query'));
    const stats = await admin.stats();
    const firstPatchS = (patches[0]!.startedAt - started) / 1000;
    return {
      'changes applied': r.applied,
      "s to the push's first PATCH (bar <= 2)": Number(firstPatchS.toFixed(2)),
      'push seconds (100 changes, backfill running)': Number(seconds.toFixed(2)),
      'push PATCH/s while the backfill runs': Number(
        ((patches.length - 1) / ((patches.at(-1)!.startedAt - patches[0]!.startedAt) / 1000)).toFixed(2),
      ),
      'backfill query requests meanwhile': queries.length,
      '429s (emulator)': stats.rateLimited,
      'max requests in a sliding second (emulator)': stats.maxPerSlidingSecond,
    };
  } finally {
    backfill?.kill('SIGTERM');
    if (backfill && backfill.exitCode === null) await new Promise((r) => backfill!.once('exit', r));
    await client.close();
    await emu.stop();
    await b.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
