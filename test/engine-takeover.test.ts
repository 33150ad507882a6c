/**
 * A worker killed (kill -9) in the middle of a 200,000-item backfill: its job's lease runs out, another
 * worker takes the job over and carries the backfill to the end from its checkpoint (pages read at most
 * the pages of an uninterrupted read plus two), and the mirror equals the platform. serve.jobLeaseSeconds is lowered to 5 so the
 * takeover comes within seconds. One request in flight and one page writer: what a kill can lose is then
 * the page being written and the page read ahead (at the defaults, more pages are read ahead and read
 * again: 204 of 200 measured).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, childEnv, runCli } from './helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from './helpers/world.js';

let w: World | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    }
  }
  await w?.close();
  w = undefined;
});

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function worker(): { child: ChildProcess; ready: Promise<void>; output: () => string } {
  const child = spawn(process.execPath, [BIN, '--config', w!.configFile, 'serve', '--port', '0', '--console', 'off'], {
    env: childEnv({ PLATFORM_API_KEY: w!.emu.apiKey }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  const ready = new Promise<void>((resolve) => {
    const on = (d: Buffer) => {
      out += d.toString();
      if (out.includes('listsync serve on')) resolve();
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
  });
  return { child, ready, output: () => out };
}

interface RunRow {
  status: string;
  holder: string;
  pages: number;
  resumed: boolean;
  attempt: number;
  error: string | null;
}

describe('a worker killed in the middle of a job', () => {
  it('kill -9 during a 200,000-item backfill: another worker carries it to the end from its checkpoint', async () => {
    const total = 200_000;
    const pageSize = 1000;
    w = await startWorld({
      emulator: { items: total, faults: { latencyMs: 100 } },
      list: { pageSize },
      platform: { maxInFlight: 1 },
      database: { pageWriters: 1 },
    });
    const raw = JSON.parse(readFileSync(w.configFile, 'utf8')) as Record<string, Record<string, unknown>>;
    writeFileSync(w.configFile, JSON.stringify({ ...raw, serve: { ...raw.serve, jobLeaseSeconds: 5 } }));
    const queued = await runCli(['--config', w.configFile, 'backfill', '--list', 'orders', '--from', '2000-01-01', '--queue'], {
      env: { PLATFORM_API_KEY: w.emu.apiKey },
    });
    expect(queued.code, queued.stderr).toBe(0);
    const jobId = /: job ([0-9a-f-]{36})$/m.exec(queued.stdout)![1]!;
    await w.emu.admin.clearRequests();

    const a = worker();
    await a.ready;
    const runs = async () => (await w!.t.db('listsync.sync_runs').where({ job_id: jobId }).orderBy('id')) as RunRow[];
    await until('the backfill past its tenth page', async () => ((await runs())[0]?.pages ?? 0) >= 10 || undefined, 120_000);
    const b = worker();
    await b.ready;
    const killedAt = Date.now();
    a.child.kill('SIGKILL');

    const done = await until(
      'the backfill finished by the other worker',
      async () => (await runs()).find((r) => r.status === 'succeeded'),
      240_000,
    );
    const takeoverSeconds = (Date.now() - killedAt) / 1000;
    expect(done.holder, b.output()).toMatch(new RegExp(`:${b.child.pid}$`));
    expect(done.holder).not.toMatch(new RegExp(`:${a.child.pid}$`));
    expect(done.resumed).toBe(true);
    expect(done.attempt).toBeGreaterThanOrEqual(1);
    const all = await runs();
    // The dead worker's run is closed (never left running); the job ran twice in all, no more.
    expect(all.map((r) => r.status)).toEqual(['failed', 'succeeded']);
    expect(all[0]!.error).toMatch(/abandoned/);

    // Every page of the read (the 200 full ones and the look past the end a read without a kill makes too),
    // and at most two of them read again: those the killed worker had read but not committed.
    const pages = (await w.emu.admin.requests())
      .filter((e) => e.path.endsWith('/items/query') && (e.body ?? '').includes(`"PageSize":${pageSize}`))
      .map((e) => e.pageIndex);
    const distinct = new Set(pages).size;
    expect(distinct).toBeGreaterThanOrEqual(total / pageSize);
    expect(distinct).toBeLessThanOrEqual(total / pageSize + 1);
    expect(pages.length - distinct).toBeLessThanOrEqual(2);
    await expectMirrorEqualsPlatform(w);
    const state = (await w.t.db.raw(`select state::text as state from listsync_jobs.job where id = ?`, [jobId])).rows as {
      state: string;
    }[];
    expect(state.map((s) => s.state)).toEqual(['completed']);
    console.log(
      `takeover: backfill finished ${takeoverSeconds.toFixed(1)} s after the kill; pages read ${pages.length}, ${distinct} distinct`,
    );
  }, 400_000);
});
