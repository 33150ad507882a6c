/**
 * serve's listener under a burst larger than its bound (src/serve/connection-bound.ts): a request on
 * a connection past serve.maxConnections is answered 503 with Retry-After and delivered again by the
 * platform; past twice the bound a connection is closed as soon as accepted. Every event is stored
 * once (duplicates harmless) and serve never holds more connections than the bound allows.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectMirrorEqualsPlatform } from '../helpers/world.js';
import { APP, closeRunning, LIST, settled, start } from './support.js';

afterEach(closeRunning);

const inboxRows = async (db: import('../../src/db.js').Knex): Promise<number> =>
  Number(((await db('listsync.webhook_inbox').count({ n: '*' })) as { n: string }[])[0]!.n);

describe('the receiver bounds its connections', () => {
  it('a burst on 10 sockets against a bound of 8: every event stored once, 503s retried, never more than 16 connections held', async () => {
    const items = 400;
    const r = await start({ items, serve: { maxConnections: 8 } });
    await r.w.emu.admin.setItemDelivery({ sockets: 10, duplicateRate: 0.2, maxAttempts: 20, retryDelayMs: 20 });
    await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } });
    await settled(r, 90_000);
    const { stats } = await r.w.emu.admin.itemHooks();
    expect(stats.abandoned).toBe(0);
    expect(stats.delivered).toBe(items + stats.duplicated);
    expect(stats.duplicated).toBeGreaterThan(0);
    // The bound was reached: some deliveries were refused and delivered again.
    expect(stats.refused).toBeGreaterThan(0);
    const conns = r.serve.connections();
    expect(conns.refused + conns.dropped).toBeGreaterThan(0);
    expect(conns.peak).toBeLessThanOrEqual(16);
    expect(await inboxRows(r.w.t.db)).toBe(items);
    await expectMirrorEqualsPlatform(r.w, LIST, APP, LIST);
  }, 120_000);

  it('503 past the bound carries Retry-After and closes the connection; /healthz is answered on any connection', async () => {
    const r = await start({ items: 10, serve: { maxConnections: 1 } });
    const { Agent, request } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    const ask = (path: string) =>
      new Promise<{ status: number; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
        const req = request(`${r.serve.url}${path}`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        });
        req.on('error', reject);
        req.end('{}');
      });
    // Two at once: the second connection is past the bound of 1.
    const [a, b] = await Promise.all([ask('/hooks/unknown-token-xyz'), ask('/hooks/unknown-token-xyz')]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([404, 503]);
    const refused = [a, b].find((x) => x.status === 503)!;
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['connection']).toBe('close');
    const [h1, h2] = await Promise.all([fetch(`${r.serve.url}/healthz`), fetch(`${r.serve.url}/healthz`)]);
    expect([h1.status, h2.status]).not.toContain(503);
    agent.destroy();
  });
});
