/**
 * Acceptance: nothing listsync prints or stores holds a secret. Every main command runs
 * through the real CLI at trace level with a known API key and database password (with
 * characters that URL-encoding and JSON-escaping change), successes and failures alike;
 * then stdout, stderr, every row of listsync's own tables, /metrics and /healthz are
 * searched for the secrets in raw, URL-encoded and JSON-escaped forms.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { secretForms } from '../src/secrets.js';
import { BIN, childEnv, runCli, type CliResult } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';
import { adminUrl, withDatabase } from './helpers/pg-admin.js';

const API_KEY = 'Sk3y"pa/ss+word%20&x=1';
const DB_PASSWORD = 'Db"Pass/w0rd?&#';
const WRONG_KEY = 'Wr0ng"Key/Given+By%User';
const ROLE = `listsync_secret_${process.pid}`;

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('no secret in anything listsync prints or stores', () => {
  let w: World;
  const seen: { what: string; text: string }[] = [];
  let dbUrl: string;
  let config: string;

  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 150, apiKeys: [API_KEY] }, list: { pageSize: 50 } });
    // A role of the test's own with that password: a server that checks passwords (embedded PostgreSQL) accepts it too.
    await withDatabase(adminUrl(w.t.url), (c) => c.query(`create role "${ROLE}" login superuser password ${c.escapeLiteral(DB_PASSWORD)}`));
    const u = new URL(w.t.url);
    u.username = ROLE;
    u.password = encodeURIComponent(DB_PASSWORD);
    dbUrl = u.toString();
    config = join(w.cwd, 'secret.json');
    writeFileSync(
      config,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl, apiKey: '${MY_KEY}', requestsPerSecond: 100, retries: 1, timeoutMs: 3000 },
        database: { url: dbUrl },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', pageSize: 50 }],
        serve: { host: '127.0.0.1', publicUrl: 'https://sync.example.com', console: '127.0.0.1:0' },
      }),
    );
  });
  afterAll(async () => {
    await w?.close();
    await withDatabase(adminUrl(inject('pgServerUrl')), (c) => c.query(`drop role if exists "${ROLE}"`));
  });

  const record = (what: string, r: CliResult) => {
    seen.push({ what: `${what} stdout`, text: r.stdout }, { what: `${what} stderr`, text: r.stderr });
    return r;
  };
  const run = async (what: string, args: string[], env: Record<string, string> = { MY_KEY: API_KEY }, file = config) =>
    record(what, await runCli(['--config', file, '--log-level', 'trace', ...args], { env, cwd: w.cwd }));

  it('runs every main command, good and bad, and finds no secret anywhere', async () => {
    expect((await run('migrate', ['migrate'])).code).toBe(0);
    expect((await run('check', ['check'])).code).toBe(0);
    await run('discover', ['discover']);
    expect((await run('pull', ['pull'])).code).toBe(0);
    await run('backfill', ['backfill', '--list', 'orders', '--from', '2020-01-01']);
    // A local edit and a conflict for push.
    const [a, b] = (await w.t.db('mirror.orders').orderBy('id').limit(2).pluck('id')) as string[];
    await w.t.db('mirror.orders').where({ id: a }).update({ customer: 'Local edit' });
    await w.t.db('mirror.orders').where({ id: b }).update({ customer: 'Local edit 2' });
    await w.emu.admin.editItem('demo', 'orders', b!, { Data: { Text2: 'Remote edit' } });
    await run('push', ['push']);
    await run('conflicts', ['conflicts', '--all']);
    await run('reconcile', ['reconcile']);
    await run('users', ['users']);
    await run('hooks subscribe', ['hooks', 'subscribe', '--channel', 'c1', '--type', '3']);
    await run('hooks list', ['hooks', 'list']);
    await run('status', ['status']);

    // Failures: a refused key, an unreachable platform and database, a config typo.
    expect((await run('pull with a wrong key', ['pull'], { MY_KEY: WRONG_KEY })).code).toBe(2);
    expect((await run('check with a wrong key', ['check'], { MY_KEY: WRONG_KEY })).code).toBe(2);
    const deadPort = await closedPort();
    const deadPlatform = join(w.cwd, 'dead-platform.json');
    writeFileSync(
      deadPlatform,
      JSON.stringify({
        platform: { baseUrl: `http://127.0.0.1:${deadPort}/v1`, apiKey: API_KEY, retries: 0 },
        database: { url: dbUrl },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      }),
    );
    expect((await run('pull, platform down', ['pull'], {}, deadPlatform)).code).toBe(1);
    const deadDb = join(w.cwd, 'dead-db.json');
    const deadUrl = new URL(dbUrl);
    deadUrl.port = String(deadPort);
    writeFileSync(
      deadDb,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl, apiKey: API_KEY },
        database: { url: deadUrl.toString() },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      }),
    );
    expect((await run('pull, database down', ['pull'], {}, deadDb)).code).toBe(1);
    expect((await run('check, database down', ['check'], {}, deadDb)).code).toBe(1);
    const typo = join(w.cwd, 'typo.json');
    writeFileSync(
      typo,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl, apiKey: '${MY_KEY}', requestPerSecond: 5 },
        database: { url: dbUrl, shema: 'x' },
        serv: {},
      }),
    );
    expect((await run('config typo', ['check'], { MY_KEY: API_KEY }, typo)).code).toBe(2);
    const badValue = join(w.cwd, 'bad-value.json');
    writeFileSync(
      badValue,
      JSON.stringify({ platform: { baseUrl: w.emu.baseUrl, apiKey: API_KEY, timeZone: 5 }, database: { url: dbUrl, poolMax: 'x' } }),
    );
    expect((await run('config bad value', ['check'], {}, badValue)).code).toBe(2);

    // serve: /metrics and /healthz after all of the above.
    const child = spawn(process.execPath, [BIN, '--config', config, '--log-level', 'trace', 'serve', '--port', '0'], {
      cwd: w.cwd,
      env: childEnv({ MY_KEY: API_KEY }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listsync serve on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.on('close', (code) => reject(new Error(`serve ended (${code}): ${err}`)));
    });
    const exited = new Promise<void>((r) => child.on('close', () => r()));
    seen.push(
      { what: '/metrics', text: await (await fetch(`${url}/metrics`)).text() },
      { what: '/healthz', text: await (await fetch(`${url}/healthz`)).text() },
    );
    child.kill('SIGTERM');
    await exited;
    seen.push({ what: 'serve stdout', text: out }, { what: 'serve stderr', text: err });

    // Everything stored in listsync's own tables.
    const tables = (await w.t.db('information_schema.tables').where({ table_schema: 'listsync' }).pluck('table_name')) as string[];
    for (const table of tables) {
      const rows = await w.t.db.raw('select row_to_json(t)::text as j from ??.?? t', ['listsync', table]);
      seen.push({ what: `listsync.${table}`, text: (rows.rows as { j: string }[]).map((r) => r.j).join('\n') });
    }
    expect(seen.some((s) => s.what === 'listsync.sync_runs' && s.text.includes('"status":"failed"'))).toBe(true);
    expect(seen.reduce((n, s) => n + s.text.length, 0)).toBeGreaterThan(10_000);

    const leaks: string[] = [];
    for (const secret of [API_KEY, DB_PASSWORD, WRONG_KEY])
      for (const form of secretForms(secret))
        for (const s of seen) if (s.text.includes(form)) leaks.push(`${s.what} holds ${JSON.stringify(form)}`);
    expect(leaks).toEqual([]);
  }, 240_000);
});
