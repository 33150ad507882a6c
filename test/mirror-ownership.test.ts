/**
 * listsync never treats a table it did not make as a mirror: check verifies every mirror
 * table is the one listsync made for that list. A field the platform lists twice is reported
 * by discover and check.
 */
import { createServer, type Server } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { startWorld, type World } from './helpers/world.js';

describe('mirror tables belong to listsync', () => {
  let w: World;
  let env: Record<string, string>;
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 20 } });
    env = { PLATFORM_API_KEY: w.emu.apiKey };
  });
  afterAll(async () => w?.close());

  it('check fails (exit 2) when a configured mirror table exists but listsync did not make it', async () => {
    await w.t.db.raw('create schema if not exists mirror');
    await w.t.db.raw('create table mirror.invoices (id bigint primary key, note text)');
    const file = join(w.cwd, 'foreign-table.json');
    writeFileSync(
      file,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl },
        database: { url: w.t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', table: 'invoices' }],
      }),
    );
    const r = await runCli(['--config', file, 'check'], { env, cwd: w.cwd });
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(
      /FAIL mirror orders: mirror\.invoices exists but listsync did not create it for list "orders".*lists\[0\]\.table/,
    );
  });

  it('check says ok for the table a pull made', async () => {
    expect((await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd })).code).toBe(0);
    const r = await runCli(['--config', w.configFile, 'check'], { env, cwd: w.cwd });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain("ok   mirror orders: mirror.orders is listsync's table for this list");
  });

  it("a second list pointed at the first list's table is refused by check", async () => {
    const file = join(w.cwd, 'shared-table.json');
    writeFileSync(
      file,
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl },
        database: { url: w.t.url },
        lists: [
          { name: 'orders', appID: 'demo', listID: 'orders' },
          { name: 'copy', appID: 'demo', listID: 'orders', table: 'orders' },
        ],
      }),
    );
    const r = await runCli(['--config', file, 'check'], { env, cwd: w.cwd });
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/FAIL mirror copy: mirror\.orders exists but listsync did not create it for list "copy"/);
  });

  it('pull of that list exits 2 as check does (the config must change), names the key, and leaves the table alone', async () => {
    const file = join(w.cwd, 'shared-table.json');
    const before = await w.t.db('mirror.orders').count<{ count: string }[]>('* as count');
    const r = await runCli(['--config', file, 'pull', '--list', 'copy'], { env, cwd: w.cwd });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /copy: pull failed: .*mirror\.orders already mirrors list "orders"; give list "copy" a table of its own \(lists\[\]\.table\)/,
    );
    expect(await w.t.db('mirror.orders').count<{ count: string }[]>('* as count')).toEqual(before);
    expect((await w.t.db('listsync.lists').where({ name: 'copy' })).length).toBe(0);
  });
});

describe('a field listed twice by the platform', () => {
  let w: World;
  let proxy: Server;
  let file: string;
  const env = () => ({ PLATFORM_API_KEY: w.emu.apiKey });
  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 5 } });
    // The emulator refuses to define a field twice; this forwards to it over HTTP and repeats one field in /fields answers.
    proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const target = new URL(req.url ?? '/', w.emu.baseUrl.replace(/\/v1$/, ''));
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'content-length')) as Record<
          string,
          string
        >;
        void fetch(target, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined }).then(
          async (answer) => {
            let text = await answer.text();
            if (target.pathname.endsWith('/fields')) {
              const envelope = JSON.parse(text) as { Data: { FieldName: string }[] };
              envelope.Data.push({ ...envelope.Data.find((f) => f.FieldName === 'Text2')! });
              text = JSON.stringify(envelope);
            }
            res.writeHead(answer.status, { 'content-type': 'application/json' });
            res.end(text);
          },
        );
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    file = join(w.cwd, 'dup.json');
    writeFileSync(
      file,
      JSON.stringify({
        platform: { baseUrl: `http://127.0.0.1:${port}/v1` },
        database: { url: w.t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      }),
    );
  });
  afterAll(async () => {
    await new Promise<void>((r) => proxy?.close(() => r()));
    await w?.close();
  });

  it('discover warns and check fails naming the field', async () => {
    const d = await runCli(['--config', file, 'discover'], { env: env(), cwd: w.cwd });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toContain('WARNING: the platform lists field(s) "Text2" 2 times for demo/orders');
    const c = await runCli(['--config', file, 'check'], { env: env(), cwd: w.cwd });
    expect(c.code).toBe(2);
    expect(c.stdout).toMatch(/FAIL platform orders: .*"Text2" 2 times/);
  });
});
