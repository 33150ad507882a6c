/**
 * The console's job buttons on a list's page (Pull now, Reconcile, Backfill from…): each a POST with the
 * page's CSRF token that queues the job on the queue serve's workers share; a wrong token queues
 * nothing (403); a worker runs what was queued.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningConsole } from '../../src/console/console-server.js';
import { jobs } from '../../jobs/index.js';
import { startServe, type RunningServe } from '../../src/serve/start-serve.js';
import { startWorld, type World } from '../helpers/world.js';
import { CONSOLE_TOKEN, consoleOn } from './support.js';

let w: World | undefined;
let running: RunningConsole | undefined;
let serve: RunningServe | undefined;
afterEach(async () => {
  await serve?.close();
  await running?.close();
  await w?.close();
  serve = running = w = undefined;
});

const auth = { authorization: `Bearer ${CONSOLE_TOKEN}` };
const queuedJobs = async () =>
  (
    await w!.t.db.raw(
      `select data->>'job' as job, data->>'list' as list, data->>'from' as "from", data->>'origin' as origin from listsync_jobs.job order by created_on`,
    )
  ).rows as { job: string; list: string; from: string | null; origin: string }[];

describe('console job buttons', () => {
  it('Pull now, Reconcile and Backfill from… queue their job with the CSRF token; a wrong token queues nothing; a worker runs them', async () => {
    w = await startWorld({ emulator: { items: 40 } });
    running = await consoleOn(w, w.config, w.t.db);
    const page = await (await fetch(`${running.url}/lists/orders`, { headers: auth })).text();
    for (const label of ['Pull now', 'Reconcile', 'Backfill from…']) expect(page).toContain(`>${label}</button>`);
    expect(page).toMatch(/<label for="backfill-from">/);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    const post = (form: Record<string, string>) =>
      fetch(`${running!.url}/lists/orders/jobs`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });

    for (const bad of ['', 'wrong']) expect((await post({ job: 'pull', csrf: bad })).status).toBe(403);
    expect((await post({ job: 'backfill', csrf })).status).toBe(400);
    expect(await queuedJobs()).toEqual([]);

    const pulled = await post({ job: 'pull', csrf });
    expect(pulled.status).toBe(303);
    expect(pulled.headers.get('location')).toBe('/lists/orders?queued=pull');
    expect((await post({ job: 'reconcile', csrf })).status).toBe(303);
    expect((await post({ job: 'backfill', from: '2020-01-01', csrf })).status).toBe(303);
    expect(await queuedJobs()).toEqual([
      { job: 'pull', list: 'orders', from: null, origin: 'operator' },
      { job: 'reconcile', list: 'orders', from: null, origin: 'operator' },
      { job: 'backfill', list: 'orders', from: '2020-01-01', origin: 'operator' },
    ]);
    const after = await (await fetch(`${running.url}/lists/orders?queued=pull`, { headers: auth })).text();
    expect(after).toContain('Pull now: queued; the first free worker runs it.');
    expect(after).toMatch(/<td>reconcile<\/td>\s*<td>queued<\/td>/);

    serve = await startServe({ jobs, ...w.deps(), port: 0, host: '127.0.0.1', schedule: false, pollMs: 200 });
    const deadline = Date.now() + 60_000;
    let ran: string[] = [];
    while (Date.now() < deadline) {
      ran = (await w.t.db('listsync.sync_runs').where({ status: 'succeeded' }).orderBy('id').pluck('job')) as string[];
      if (ran.length === 3) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(ran).toEqual(['pull', 'reconcile', 'backfill']);
  }, 120_000);
});
