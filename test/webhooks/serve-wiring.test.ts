/**
 * The real `listsync serve` binary: /metrics and /hooks/ are mounted, an item
 * event asks for an early pull that then runs, and SIGTERM stops it cleanly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { BIN, childEnv } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('listsync serve wiring', () => {
  let t: TestDatabase;
  let emu: RunningEmulator;
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let url: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    emu = await startEmulator({ sample: true, items: 200, rateLimit: { burst: 50, perSecond: 50 } });
    const dir = mkdtempSync(join(tmpdir(), 'listsync-serve-'));
    writeFileSync(
      join(dir, 'listsync.config.json'),
      JSON.stringify({
        platform: { baseUrl: emu.baseUrl, requestsPerSecond: 50 },
        database: { url: t.url },
        // A pull schedule far away: only the webhook makes this pull run now.
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', schedule: { pull: '0 0 1 1 *' } }],
        users: { enabled: false },
        serve: { host: '127.0.0.1', port: 0, console: '127.0.0.1:0' },
      }),
    );
    child = spawn(process.execPath, [BIN, 'serve'], {
      cwd: dir,
      env: childEnv({ PLATFORM_API_KEY: emu.apiKey, LISTSYNC_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    url = await until('serve to listen', async () => /listsync serve on (http:\/\/\S+?) /.exec(stdout)?.[1], 30_000);
  });
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await emu?.close();
    await t?.drop();
  });

  it('mounts /metrics and /hooks/, pulls early on an item event, and stops on SIGTERM', async () => {
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('# TYPE listsync_rows_total counter');
    const unknown = await fetch(`${url}/hooks/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`, {
      method: 'POST',
      headers: { Channel: 'c', Type: '1', 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(unknown.status).toBe(404);

    const [sub] = (await t
      .db('listsync.webhook_subscriptions')
      .insert({
        resource: 'workflow/tasks',
        channel: 'c',
        type: 1,
        token: 'serve-wiring-token-0123456789',
        callback_url: `${url}/hooks/serve-wiring-token-0123456789`,
      })
      .returning('id')) as { id: number }[];
    expect(sub).toBeDefined();
    const ok = await fetch(`${url}/hooks/serve-wiring-token-0123456789`, {
      method: 'POST',
      headers: { Channel: 'c', Type: '1', 'Content-Type': 'application/json' },
      body: JSON.stringify({
        TaskID: 'task-body-marker-42',
        WorkflowID: 'w',
        ListDataID: '1',
        Event: 'approved',
        Assignee: 'u',
        Created: '2026-11-22 10:00:00',
      }),
    });
    expect(await ok.json()).toEqual({ ok: true, duplicate: false });
    const run = await until('the early pull', async () => {
      const r = (await t.db('listsync.sync_runs').where({ list_name: 'orders', job: 'pull', status: 'succeeded' }).first()) as
        { rows_inserted: number } | undefined;
      return r;
    });
    expect(run.rows_inserted).toBe(200);
    const rows = (await fetch(`${url}/metrics`).then((r) => r.text())).match(
      /^listsync_rows_total\{list="orders",kind="inserted"\} (\d+)$/m,
    );
    expect(rows?.[1]).toBe('200');

    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) =>
      child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (c) => resolve(c)),
    );
    expect(code).toBe(0);
    expect(stdout).toContain('listsync serve stopped');
    // Info logs tell what happened, but never hold the token or the body.
    expect(stderr).toContain('webhook event stored');
    expect(stderr).not.toContain('serve-wiring-token-0123456789');
    expect(stderr).not.toContain('task-body-marker-42');
  });
});
