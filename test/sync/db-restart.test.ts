/**
 * PostgreSQL restarts under a pull: the run ends with an error that names the database (not
 * the failed lock release), knex's stack never reaches the terminal, and once the server is
 * back the next pull closes the abandoned run and resumes. The server is a private one.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, migrateLatest, type Knex } from '../../src/db.js';
import { startEmbeddedDb, type EmbeddedDb } from '../../src/embedded-db.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { startBoss } from '../../src/engine/boss.js';
import { createEnqueuer } from '../../src/engine/enqueue.js';
import type { JobPayload } from '../../src/engine/job-payload.js';
import { silentLogger } from '../../src/logger.js';
import { BIN, childEnv, runCli } from '../helpers/cli.js';

describe('a database restart under a pull', () => {
  let dir: string;
  let pg: EmbeddedDb;
  let emu: RunningEmulator;
  let db: Knex;
  let configFile: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'listsync-restart-'));
    pg = await startEmbeddedDb({ dir: join(dir, 'data'), persistent: true });
    db = createDb({ url: pg.url, poolMax: 2 });
    await migrateLatest(db);
    emu = await startEmulator({
      port: 0,
      sample: true,
      items: 3000,
      rateLimit: { burst: 100, perSecond: 100 },
      faults: { latencyMs: 150 },
    });
    configFile = join(dir, 'listsync.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        platform: { baseUrl: emu.baseUrl, requestsPerSecond: 20, maxInFlight: 1 },
        database: { url: pg.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', pageSize: 100 }],
      }),
    );
  }, 120_000);
  afterAll(async () => {
    await db?.destroy();
    await emu?.close();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the pull fails naming the database; the next pull resumes', async () => {
    const child = spawn(process.execPath, [BIN, '--config', configFile, 'pull'], {
      cwd: dir,
      env: childEnv({ PLATFORM_API_KEY: emu.apiKey }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    for (let i = 0; i < 300; i++) {
      const row = (await db('listsync.sync_runs').where({ job: 'pull', status: 'running' }).first('pages')) as
        { pages: number } | undefined;
      if ((row?.pages ?? 0) >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await db.destroy();
    // Down until the pull has given up, then back: the run's row is left 'running' on the server.
    await pg.stop();
    const code = await exited;
    pg = await startEmbeddedDb({ dir: join(dir, 'data'), persistent: true, port: pg.port });
    db = createDb({ url: pg.url, poolMax: 2 });
    expect(code, stderr).toBe(1);
    // (The embedded server's password is "postgres", so that word is masked wherever it appears.)
    expect(stderr).toMatch(new RegExp(`orders: pull failed: The database at \\S+:\\*\\*\\*@127\\.0\\.0\\.1:${pg.port}/\\S* failed`));
    expect(stderr).not.toContain('not queryable');
    expect(stdout + stderr).not.toContain('Acquire connection error');
    expect(stdout + stderr).not.toMatch(/^\s+at /m);
    expect(stdout + stderr).not.toContain(':postgres@');

    const again = await runCli(['--config', configFile, 'pull'], { cwd: dir, env: { PLATFORM_API_KEY: emu.apiKey }, timeoutMs: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('resumed');
    const runs = (await db('listsync.sync_runs').where({ job: 'pull' }).orderBy('id').select('status', 'error')) as {
      status: string;
      error: string | null;
    }[];
    expect(runs.map((r) => r.status)).toEqual(['failed', 'succeeded']);
    expect(runs[0]!.error).toMatch(/abandoned|database/);
  }, 180_000);

  it('a fire while the database is gone fails to queue (the next fire tries again), and queues once it is back', async () => {
    const fireAt = (n: number): JobPayload => ({
      job: 'pull',
      list: 'orders',
      account: 'default',
      origin: 'schedule',
      firedAt: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString(),
      scope: 'list:orders',
      accountCap: 0,
    });
    const options = () => ({ leaseSeconds: 60, retryLimit: 0, retryDelaySeconds: 1 });
    const boss = await startBoss(db, { supervise: false, logger: silentLogger() });
    expect(await createEnqueuer(boss, db, options).fire(fireAt(1))).toHaveProperty('sent');
    await boss.stop({ graceful: false });
    await db.destroy();
    await pg.stop();
    db = createDb({ url: pg.url, poolMax: 2 });
    const down = await startBoss(db, { supervise: false, logger: silentLogger() }).catch((err: unknown) => err);
    expect(down).toBeInstanceOf(Error);
    pg = await startEmbeddedDb({ dir: join(dir, 'data'), persistent: true, port: pg.port });
    const back = await startBoss(db, { supervise: false, logger: silentLogger() });
    // The job of the first fire is still queued: the next fire is coalesced with it, with the reason.
    expect(await createEnqueuer(back, db, options).fire(fireAt(2))).toEqual({ coalesced: 'coalesced: the previous fire is still queued' });
    await back.stop({ graceful: false });
  }, 120_000);
});
