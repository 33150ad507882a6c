/**
 * The console over HTTP: access (401 without the token, the ?token= exchange
 * for a cookie, loopback-only without a token), CSRF (403, nothing changed),
 * the webhook listener (404 for every console path), no secret in any page or
 * asset, escaping, and a conflict that moved since its page was drawn.
 *
 * One world for the file, in order: the tests share the staged conflict.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningConsole } from '../../src/console/console-server.js';
import type { Knex } from '../../src/db.js';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { jobs } from '../../jobs/index.js';
import { startServe } from '../../src/serve/start-serve.js';
import { startWorld, type World } from '../helpers/world.js';
import { CONSOLE_TOKEN, DB_PASSWORD, consoleOn, consolePaths, stageConflict, withPassword } from './support.js';

let w: World;
let db: Knex;
let dropRole: (() => Promise<void>) | undefined;
let consoleUrl: string;
let running: RunningConsole;
let staged: Awaited<ReturnType<typeof stageConflict>>;
const ESCAPED_LOCAL = '<script>alert("x")</script> & Co';
const auth = { authorization: `Bearer ${CONSOLE_TOKEN}` };

beforeAll(async () => {
  w = await startWorld({ emulator: { items: 20 }, list: { conflictPolicy: 'manual', schedule: '*/10 * * * *' } });
  staged = await stageConflict(w, ESCAPED_LOCAL);
  const made = await withPassword(w);
  db = made.db;
  dropRole = made.drop;
  running = await consoleOn(w, made.config, db);
  consoleUrl = running.url;
});

afterAll(async () => {
  await running?.close();
  await dropRole?.();
  await w?.close();
});

const csrfOf = (page: string): string => /name="csrf" value="([^"]+)"/.exec(page)![1]!;

const post = (path: string, form: Record<string, string>, headers: Record<string, string> = auth) =>
  fetch(`${consoleUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });

describe('console over HTTP', () => {
  it('without the token every console path is 401, a wrong token too', async () => {
    for (const path of [...consolePaths(staged.conflictId), `/conflicts/${staged.conflictId}/resolve`]) {
      expect((await fetch(`${consoleUrl}${path}`, { redirect: 'manual' })).status, path).toBe(401);
      expect((await fetch(`${consoleUrl}${path}`, { headers: { authorization: 'Bearer wrong-token' } })).status, path).toBe(401);
    }
    expect((await post(`/conflicts/${staged.conflictId}/resolve`, { keep: 'local' }, {})).status).toBe(401);
    expect((await fetch(`${consoleUrl}/?token=wrong`, { redirect: 'manual' })).status).toBe(401);
  });

  it('?token= is swapped once for an HttpOnly SameSite=Strict cookie and dropped from the address', async () => {
    const first = await fetch(`${consoleUrl}/budget?token=${CONSOLE_TOKEN}`, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/budget');
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const withCookie = await fetch(`${consoleUrl}/budget`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(withCookie.status).toBe(200);
    expect(await withCookie.text()).toContain('Request budget');
  });

  it('no page or asset holds a secret; values from the platform are escaped', async () => {
    for (const path of consolePaths(staged.conflictId)) {
      const res = await fetch(`${consoleUrl}${path}`, { headers: auth });
      expect(res.status, path).toBe(path === '/no-such-page' ? 404 : 200);
      const text = await res.text();
      expect(text, path).not.toContain(w.emu.apiKey);
      expect(text, path).not.toContain(DB_PASSWORD);
      expect(text, path).not.toContain(CONSOLE_TOKEN);
      expect(res.headers.get('content-security-policy'), path).toContain("script-src 'self'");
    }
    const page = await (await fetch(`${consoleUrl}/conflicts/${staged.conflictId}`, { headers: auth })).text();
    expect(page).not.toContain(ESCAPED_LOCAL);
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co');
    expect(page).toContain('Remote Ltd');
  });

  it("a list's page draws its runs, chart, schema log and mapping", async () => {
    const page = await (await fetch(`${consoleUrl}/lists/orders`, { headers: auth })).text();
    expect(page).toMatch(/<svg\s+role="img"/);
    expect(page).toContain('Lag over the last day');
    expect(page).toMatch(/<td>pull<\/td><td>succeeded<\/td>/);
    expect(page).toMatch(/<td>push<\/td><td>succeeded<\/td>/);
    expect(page).toContain(`<td>${F.customer}</td>`);
    expect(page).toMatch(/<td>customer<\/td><td>text<\/td>/);
    expect(page).toContain('<td>derived</td>');
  });

  it('the budget page shows what the limiter learned', async () => {
    const before = await fetch(`${consoleUrl}/budget`, { headers: auth });
    expect(before.status).toBe(200);
    const calm = await before.text();
    expect(calm).toMatch(/requests in the last hour/);
    expect(calm).toMatch(/<td>Bursts<\/td><td>on /);
    expect(calm).toMatch(/<td>429 answers seen<\/td><td>0<\/td>/);
    // What a process records when 429s kept coming: bursts off, a wider margin, the limit said to be too high.
    await w.t.db.raw(
      `update listsync.rate_budget set bursts_allowed = false, margin_ms = 40, throttled_total = 7,
              last_throttled_at = clock_timestamp(), limit_too_high_at = clock_timestamp()`,
    );
    const after = await (await fetch(`${consoleUrl}/budget`, { headers: auth })).text();
    expect(after).toMatch(/<td>Bursts<\/td><td>off /);
    expect(after).toMatch(/<td>Learned margin per window<\/td><td>40 ms<\/td>/);
    expect(after).toMatch(/<td>429 answers seen<\/td><td>7<\/td>/);
    expect(after).toMatch(/looks higher than the platform allows/);
    await w.t.db.raw(
      `update listsync.rate_budget set bursts_allowed = true, margin_ms = 0, throttled_total = 0, last_throttled_at = null, limit_too_high_at = null`,
    );
  });

  it('a POST with a wrong CSRF token is 403 and changes nothing', async () => {
    await w.emu.admin.clearRequests();
    const path = `/conflicts/${staged.conflictId}/resolve`;
    const seen = String(staged.remoteVersion);
    for (const csrf of ['', 'wrong', undefined]) {
      const form: Record<string, string> = { keep: 'local', seen_version: seen };
      if (csrf !== undefined) form.csrf = csrf;
      expect((await post(path, form)).status).toBe(403);
    }
    expect(((await w.t.db('listsync.conflicts').where({ id: staged.conflictId }).first()) as { status: string }).status).toBe('open');
    expect(((await w.t.db('listsync.outbox').where({ item_id: staged.itemId }).first()) as { status: string }).status).toBe('conflict');
    expect(await w.emu.admin.requests()).toEqual([]);
  });

  it('a POST whose shown version is missing or no version is 400 and changes nothing', async () => {
    const page = await (await fetch(`${consoleUrl}/conflicts/${staged.conflictId}`, { headers: auth })).text();
    await w.emu.admin.clearRequests();
    for (const seen of ['', 'abc', '-1', '1.5']) {
      const res = await post(`/conflicts/${staged.conflictId}/resolve`, { keep: 'remote', seen_version: seen, csrf: csrfOf(page) });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('the version it showed');
    }
    expect(((await w.t.db('listsync.conflicts').where({ id: staged.conflictId }).first()) as { status: string }).status).toBe('open');
    expect(await w.emu.admin.requests()).toEqual([]);
  });

  it('an item that moved since the page was drawn is refused with nothing changed', async () => {
    const page = await (await fetch(`${consoleUrl}/conflicts/${staged.conflictId}`, { headers: auth })).text();
    const seen = /name="seen_version" value="(\d+)"/.exec(page)![1]!;
    expect(Number(seen)).toBe(staged.remoteVersion);
    await w.emu.admin.editItem('demo', 'orders', staged.itemId, { Data: { [F.customer]: 'Moved Again' } });
    const res = await post(`/conflicts/${staged.conflictId}/resolve`, { keep: 'remote', seen_version: seen, csrf: csrfOf(page) });
    expect(res.status).toBe(409);
    expect(await res.text()).toContain('changed on the platform since the page was drawn');
    expect(((await w.t.db('listsync.conflicts').where({ id: staged.conflictId }).first()) as { status: string }).status).toBe('open');
    expect(((await w.t.db('mirror.orders').where({ id: staged.itemId }).first()) as { customer: string }).customer).toBe(ESCAPED_LOCAL);
  });

  it('the webhook listener answers 404 for every console path', async () => {
    const s = await startServe({ jobs, ...w.deps(), port: 0, host: '127.0.0.1', schedule: false });
    try {
      for (const path of [...consolePaths(staged.conflictId), `/conflicts/${staged.conflictId}/resolve`]) {
        expect((await fetch(`${s.url}${path}`, { headers: auth })).status, path).toBe(404);
        expect((await fetch(`${s.url}${path}?token=${CONSOLE_TOKEN}`, { redirect: 'manual' })).status, path).toBe(404);
      }
    } finally {
      await s.close();
    }
  });

  it('without a token: loopback clients naming a loopback host only', async () => {
    const open = await consoleOn(w, w.config, w.t.db, null);
    try {
      expect((await fetch(`${open.url}/`)).status).toBe(200);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${open.url}/`, { headers: { host: 'attacker.example:8081' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(401);
    } finally {
      await open.close();
    }
  });
});
