/**
 * The console in a real browser: headless Chromium (the Debian package,
 * .ci/run installs it) driven by playwright-core. Three lists — one healthy,
 * one failing, one with real-time events waiting and a conflict — read on the
 * overview; the conflict opened and settled with its button; the platform and
 * listsync.conflicts checked afterwards. A screenshot of each page goes to
 * test-output/console/ (git-ignored).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import type { RunningConsole } from '../../src/console/console-server.js';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { startWorld, type World } from '../helpers/world.js';
import { CONSOLE_TOKEN, consoleOn } from './support.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUT = join(import.meta.dirname, '..', '..', 'test-output', 'console');

let w: World;
let config: Config;
let running: RunningConsole;
let browser: Browser;
let page: Page;
let itemId: string;

const deps = () => ({ ...w.deps(), config });
const listOf = (name: string) => config.lists.find((l) => l.name === name)!;
const shot = (name: string) => page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
const rowOf = (name: string) => page.locator('tbody tr', { has: page.getByRole('link', { name, exact: true }) });

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: apt-get install -y chromium (as .ci/run does), or set CHROMIUM_PATH.`);
  mkdirSync(OUT, { recursive: true });
  w = await startWorld({ emulator: { items: 20 } });
  config = parseConfig({
    platform: { baseUrl: w.emu.baseUrl, apiKey: w.emu.apiKey, requestsPerSecond: 100, timeoutMs: 5000, retries: 0 },
    database: { url: w.t.url, schema: 'mirror' },
    serve: { publicUrl: 'https://sync.example.com' },
    lists: [
      { name: 'orders', appID: 'demo', listID: 'orders', schedule: '*/10 * * * *' },
      { name: 'invoices', appID: 'demo', listID: 'no_such_list' },
      { name: 'tickets', appID: 'demo', listID: 'orders', realtime: true, conflictPolicy: 'manual' },
    ],
  });
  await pullList(deps(), listOf('orders'));
  await expect(pullList(deps(), listOf('invoices'))).rejects.toThrow();
  await pullList(deps(), listOf('tickets'));
  // A conflict on "tickets": edited here and on the platform; the push holds it (manual).
  itemId = String((await w.t.db('mirror.tickets').orderBy('id').first('id')).id);
  await w.t.db('mirror.tickets').where({ id: itemId }).update({ customer: 'Local Co' });
  await w.emu.admin.editItem('demo', 'orders', itemId, { Data: { [F.customer]: 'Remote Ltd' } });
  expect((await pushList(deps(), listOf('tickets'))).conflicts).toBe(1);
  // Three item events for "tickets" received ten minutes ago and not applied yet.
  const [sub] = (await w.t
    .db('listsync.webhook_subscriptions')
    .insert({
      platform_id: 'sub-1',
      resource: 'lists/demo/orders',
      channel: 'webhook',
      type: 1,
      token: 'tok-tickets-0123456789',
      callback_url: 'https://sync.example.com/hooks/x',
      list_name: 'tickets',
    })
    .returning('id')) as { id: string }[];
  for (let i = 0; i < 3; i++)
    await w.t.db('listsync.webhook_inbox').insert({
      subscription_id: sub!.id,
      dedup_key: `k${i}`,
      channel: 'webhook',
      type: 1,
      headers: '{}',
      body: JSON.stringify({ ListDataID: itemId }),
      received_at: w.t.db.raw(`now() - interval '10 minutes'`),
    });
  await w.t.db.raw('analyze mirror.orders, mirror.tickets'); // the statistics the overview's row counts come from
  running = await consoleOn(w, config, w.t.db);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  page = await browser.newPage({ viewport: { width: 1400, height: 640 } });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await running?.close();
  await w?.close();
});

describe('console in Chromium', () => {
  it('signs in with ?token= and leaves it out of the address', async () => {
    await page.goto(`${running.url}/?token=${CONSOLE_TOKEN}`);
    expect(new URL(page.url()).search).toBe('');
    await expect(page.getByRole('heading', { name: 'Lists' }).isVisible()).resolves.toBe(true);
    // The keyboard reaches the skip link first, then the sections.
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').innerText()).toBe('Skip to the content');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').innerText()).toBe('Overview');
  });

  it('the overview says what each list is doing', async () => {
    await page.goto(`${running.url}/`);
    expect(await page.locator('thead th[scope="col"]').count()).toBe(9);
    // Cells: list, health, fresh as of, last run, rows, changes pending / failed, open conflicts, real time, schedule.
    const cells = (name: string) => rowOf(name).locator('td').allInnerTexts();
    const [, health, fresh, lastRun, rows, changes, conflicts, realtime, schedule] = await cells('orders');
    expect(health).toBe('healthy');
    expect(fresh).toMatch(/^\d+ s ago/);
    expect(lastRun).toMatch(/^pull succeeded \d+ s ago/);
    expect([rows, changes, conflicts, realtime]).toEqual(['20', '0 / 0', '0', 'off']);
    expect(schedule).toMatch(/^pull \*\/10 \* \* \* \*; next in \d+ (s|min)/);
    const invoices = await cells('invoices');
    expect(invoices[1]).toMatch(/^degraded\s+last pull failed, never pulled$/);
    expect(invoices[2]).toBe('never pulled');
    expect(invoices[4]).toBe('—'); // no mirror table
    expect(invoices[3]).toMatch(/^pull failed \d+ s ago\s+\S/);
    expect(invoices[8]).toBe('not scheduled');
    const tickets = await cells('tickets');
    expect(tickets[1]).toMatch(/^degraded\s+events waiting, conflicts open$/);
    expect(tickets[3]).toMatch(/^push succeeded/);
    expect([tickets[5], tickets[6]]).toEqual(['0 / 0', '1']);
    expect(tickets[7]).toMatch(/^subscribed; 3 events waiting, oldest 10 min/);
    // Degraded lists first, in config order; the summary counts them.
    // The list's link (the cell also holds its platform title once a pull read it).
    expect(await page.locator('tbody tr td:first-child a').allInnerTexts()).toEqual(['invoices', 'tickets', 'orders']);
    expect(await page.locator('.summary').innerText()).toMatch(/3\s+lists\s+2\s+degraded\s+1\s+healthy/);
    await shot('overview');
  });

  it("a list's page and the budget page draw", async () => {
    await page.getByRole('link', { name: 'tickets', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'List tickets' }).isVisible()).resolves.toBe(true);
    expect(await page.locator('svg[role="img"]').count()).toBe(2);
    await shot('list');
    await page.getByRole('link', { name: 'Budget' }).click();
    await expect(page.getByRole('heading', { name: 'Request budget' }).isVisible()).resolves.toBe(true);
    await shot('budget');
  });

  it('opens the conflict and keeps local with the button: it is sent at once, the conflict is recorded as resolved', async () => {
    await page.getByRole('link', { name: 'Conflicts' }).click();
    await shot('conflicts');
    await page
      .getByRole('link', { name: /^conflict \d+$/ })
      .first()
      .click();
    const fields = await page.locator('table').innerText();
    expect(fields).toMatch(/customer\s+\S.*\s+Local Co\s+Remote Ltd/);
    await shot('conflict');
    await page.getByRole('button', { name: 'Keep local' }).click();
    await expect(page.getByRole('status').innerText()).resolves.toMatch(/the local change is kept/);
    await shot('conflict-settled');
    const c = (await w.t.db('listsync.conflicts').where({ item_id: itemId }).first()) as { status: string; resolution: string };
    expect(c).toMatchObject({ status: 'resolved', resolution: 'local' });
    expect((await w.emu.admin.getItem('demo', 'orders', itemId))[F.customer]).toBe('Local Co');
    expect((await pushList(deps(), listOf('tickets'))).applied).toBe(0);
  });
});

/** A held conflict (manual) on another "tickets" item: customer edited here and on the platform. */
async function heldConflict(n: number, local: string, remote: string): Promise<{ id: string; conflictId: number }> {
  const id = String(((await w.t.db('mirror.tickets').orderBy('id').offset(n).first('id')) as { id: string }).id);
  await w.t.db('mirror.tickets').where({ id }).update({ customer: local });
  await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: remote } });
  expect((await pushList(deps(), listOf('tickets'))).conflicts).toBe(1);
  const c = (await w.t.db('listsync.conflicts').where({ item_id: id, status: 'open' }).first('id')) as { id: number };
  return { id, conflictId: c.id };
}

const conflictState = async (conflictId: number) =>
  (await w.t.db('listsync.conflicts').where({ id: conflictId }).first('status', 'resolution')) as {
    status: string;
    resolution: string | null;
  };

describe('every conflict can be settled from the console', () => {
  it('an item that moves after the page was drawn is refused once, the page shows the new platform values, the next click settles it', async () => {
    const { id, conflictId } = await heldConflict(1, 'Local Two', 'Remote Two');
    await page.goto(`${running.url}/conflicts/${conflictId}`);
    expect(await page.locator('table').innerText()).toMatch(/Customer \(Text2\)\s+customer\s+.*Local Two\s+Remote Two/);
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'Remote Three' } });
    await page.getByRole('button', { name: 'Keep local' }).click();
    await expect(page.getByRole('alert').innerText()).resolves.toMatch(
      /changed on the platform since the page was drawn.*nothing was changed/,
    );
    expect(await page.locator('table').innerText()).toMatch(/Local Two\s+Remote Three/);
    await shot('conflict-moved');
    expect(await conflictState(conflictId)).toEqual({ status: 'open', resolution: null });
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Remote Three');
    await page.getByRole('button', { name: 'Keep local' }).click();
    await expect(page.getByRole('status').innerText()).resolves.toMatch(/the local change is kept and was sent to the platform/);
    expect(await conflictState(conflictId)).toEqual({ status: 'resolved', resolution: 'local' });
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Local Two');
  });

  it('Keep local while the platform fails its read answers a console page, with the console headers, and changes nothing', async () => {
    const { id, conflictId } = await heldConflict(2, 'Local Four', 'Remote Four');
    await page.goto(`${running.url}/conflicts/${conflictId}`);
    await w.emu.admin.setFaults({ errorRate: 1, faultPaths: 'items/query' });
    try {
      const answer = page.waitForResponse((r) => r.url().endsWith(`/conflicts/${conflictId}/resolve`));
      await page.getByRole('button', { name: 'Keep local' }).click();
      const r = await answer;
      expect(r.status()).toBe(502);
      expect(r.headers()['content-type']).toMatch(/^text\/html/);
      expect(r.headers()['content-security-policy']).toMatch(/default-src 'none'/);
      expect(r.headers()['x-frame-options']).toBe('DENY');
    } finally {
      await w.emu.admin.setFaults({ errorRate: null, faultPaths: null });
    }
    await expect(page.getByRole('heading', { name: 'Nothing was changed' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('alert').innerText()).resolves.toMatch(
      new RegExp(`the platform could not be asked about item ${id} .*nothing was changed`),
    );
    await shot('conflict-platform-failed');
    expect(await conflictState(conflictId)).toEqual({ status: 'open', resolution: null });
    expect(await w.t.db('listsync.outbox').where({ item_id: id }).pluck('status')).toEqual(['conflict']);
    expect((await w.emu.admin.getItem('demo', 'orders', id))[F.customer]).toBe('Remote Four');
  });
});
