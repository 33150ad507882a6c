/**
 * serve's listener under a burst larger than its bound (src/serve/connection-bound.ts): a request on
 * a connection past serve.maxConnections waits briefly for room, else is answered 503 with
 * Retry-After and delivered again by the platform; past twice the bound a connection is closed as
 * soon as accepted. Every event is stored once (duplicates harmless) and serve never holds more
 * connections than the bound allows.
 */
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { startHttp } from '../../src/serve/routes.js';
import { expectMirrorEqualsPlatform } from '../helpers/world.js';
import { APP, closeRunning, LIST, settled, start, until } from './support.js';

afterEach(closeRunning);

const inboxRows = async (db: import('../../src/db.js').Knex): Promise<number> =>
  Number(((await db('listsync.webhook_inbox').count({ n: '*' })) as { n: string }[])[0]!.n);

/**
 * A bulk edit of 400 items delivered to serve with a bound of 8 connections, on `sockets` emulator
 * connections (0: a new one per delivery), settled: every event stored once, the mirror equal.
 * The emulator's backoff stops at 1 s, so a refusal costs a second rather than minutes on a slow
 * machine; what each test asserts of the refusals is its own.
 */
async function burst(sockets: number) {
  const items = 400;
  const r = await start({ items, serve: { maxConnections: 8 } });
  await r.w.emu.admin.setItemDelivery({ sockets, duplicateRate: 0.2, maxAttempts: 20, retryDelayMs: 20, maxRetryDelayMs: 1000 });
  await r.w.emu.admin.bulkEdit(APP, LIST, { Data: { Text4: 'bulk edit' } });
  await settled(r, 90_000);
  const { stats } = await r.w.emu.admin.itemHooks();
  expect(stats.abandoned).toBe(0);
  expect(stats.delivered).toBe(items + stats.duplicated);
  expect(stats.duplicated).toBeGreaterThan(0);
  expect(await inboxRows(r.w.t.db)).toBe(items);
  await expectMirrorEqualsPlatform(r.w, LIST, APP, LIST);
  return { stats, conns: r.serve.connections() };
}

describe('the receiver bounds its connections', () => {
  it('a burst on 10 sockets against a bound of 8: every event stored once, the two connections past the bound wait their turn instead of drawing refusals', async () => {
    const { stats, conns } = await burst(10);
    // A connection past the bound that answered 503 at once took most of the burst (it was always the
    // first free one), and every refusal doubled the sender's wait: 2,026 refusals for 492 deliveries.
    expect(stats.refused).toBeLessThan(stats.delivered / 10);
    expect(conns.peak).toBe(10);
  }, 120_000);

  it('a flood, one new connection per delivery: past twice the bound connections are closed and 503s retried; every event stored once, never more than 16 connections held', async () => {
    const { stats, conns } = await burst(0);
    // The bound was reached: some deliveries were refused and delivered again.
    expect(stats.refused).toBeGreaterThan(0);
    expect(conns.refused + conns.dropped).toBeGreaterThan(0);
    expect(conns.peak).toBeLessThanOrEqual(16);
  }, 120_000);

  it('a request past the bound with no room in time: 503 with Retry-After, the connection closed; served once room comes; /healthz on any connection', async () => {
    // The listener itself, with a route that holds its request until told: the bound of 1 is full while it does.
    let release!: () => void;
    const held = new Promise<void>((ok) => (release = ok));
    const http = await startHttp({
      routes: {
        '/hold': async (_req, res) => {
          await held;
          res.end('held');
        },
        '/quick': (_req, res) => void res.end('quick'),
        '/healthz': (_req, res) => void res.end('ok'),
      },
      logger: silentLogger(),
      host: '127.0.0.1',
      port: 0,
      bound: { maxConnections: 1, exempt: ['/healthz'] },
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    const ask = (path: string) =>
      new Promise<{ status: number; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
        const req = request(`${http.url}${path}`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const first = ask('/hold');
      await until('the held request', async () => http.connections().open === 1);
      const refused = await ask('/quick');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers['connection']).toBe('close');
      expect((await ask('/healthz')).status).toBe(200);
      // Room comes while a request past the bound waits: it is served, not refused.
      const waiting = ask('/quick');
      setTimeout(release, 50);
      expect([(await first).status, (await waiting).status]).toEqual([200, 200]);
      expect(http.connections().refused).toBe(1);
    } finally {
      agent.destroy();
      await http.close();
    }
  });
});
