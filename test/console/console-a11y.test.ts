/**
 * The console at 500 lists in headless Chromium: axe-core (its source injected into each page) finds
 * no serious or critical violation on any page at 1024 and 1440 px; the overview fits 1440 px
 * without sideways scrolling; its filter (name, state) and sort (any column, both ways) run on the
 * server from query parameters, so they work without JavaScript and page with the pager.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import cron from 'node-cron';
import { parseConfig, type Config } from '../../src/config.js';
import { spreadOverMinute } from '../../src/serve/scheduler.js';
import type { RunningConsole } from '../../src/console/console-server.js';
import { pullList } from '../../src/sync/pull.js';
import { startWorld, type World } from '../helpers/world.js';
import { CONSOLE_TOKEN, consoleOn, stageConflict } from './support.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const NAMES = Array.from({ length: 500 }, (_, i) => `list_${String(i).padStart(3, '0')}`);

let w: World;
let config: Config;
let running: RunningConsole;
let browser: Browser;
let page: Page;
let conflictId: number;

interface AxeResult {
  violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[];
}

async function seriousViolations(p: Page): Promise<string[]> {
  await p.addScriptTag({ content: AXE });
  const result = (await p.evaluate('axe.run()')) as AxeResult;
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

const rowOf = (name: string) => page.locator('tbody tr', { has: page.getByRole('link', { name, exact: true }) });
const names = () => page.locator('tbody tr td:first-child a').allInnerTexts();

beforeAll(async () => {
  w = await startWorld({ emulator: { items: 20 }, list: { conflictPolicy: 'manual' } });
  ({ conflictId } = await stageConflict(w));
  config = parseConfig({
    platform: { baseUrl: w.emu.baseUrl, apiKey: w.emu.apiKey, requestsPerSecond: 100, timeoutMs: 5000, retries: 0 },
    database: { url: w.t.url, schema: 'mirror' },
    lists: [
      { name: 'orders', appID: 'demo', listID: 'orders', conflictPolicy: 'manual', schedule: '*/5 * * * *' },
      { name: 'broken', appID: 'demo', listID: 'no_such_list' },
      ...NAMES.slice(2).map((name, i) => ({ name, appID: 'demo', listID: 'orders', ...(i % 7 === 0 ? { schedule: '0 * * * *' } : {}) })),
    ],
  });
  await expect(pullList({ ...w.deps(), config }, config.lists[1]!)).rejects.toThrow();
  await pullList({ ...w.deps(), config }, config.lists[2]!);
  // Two events for "orders" whose re-read keeps failing (the platform answered 502), one not tried yet.
  const [sub] = (await w.t
    .db('listsync.webhook_subscriptions')
    .insert({
      platform_id: 'sub-a11y',
      resource: 'lists/demo/orders',
      channel: 'webhook',
      type: 1,
      token: 'tok-orders-0123456789',
      callback_url: 'https://sync.example.com/hooks/x',
      list_name: 'orders',
    })
    .returning('id')) as { id: string }[];
  for (const [i, attempts] of [3, 1, 0].entries())
    await w.t.db('listsync.webhook_inbox').insert({
      subscription_id: sub!.id,
      dedup_key: `a${i}`,
      channel: 'webhook',
      type: 1,
      headers: '{}',
      body: JSON.stringify({ ListDataID: '1' }),
      attempts,
      last_error: attempts ? `GET /lists/demo/orders/items/1 failed: HTTP 502 (attempt ${attempts})` : null,
      last_attempt_at: attempts ? w.t.db.raw(`now() - interval '${attempts} minutes'`) : null,
    });
  running = await consoleOn(w, config, w.t.db);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  // axe's source is injected as an inline script, which the console's Content-Security-Policy refuses: the test bypasses it.
  page = await browser.newPage({ viewport: { width: 1440, height: 900 }, bypassCSP: true });
  await page.goto(`${running.url}/?token=${CONSOLE_TOKEN}`);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await running?.close();
  await w?.close();
});

describe('the console at 500 lists', () => {
  it('a next fire is the one serve schedules: at the second its job name spreads it to', async () => {
    await page.goto(`${running.url}/?q=orders`);
    const at = await rowOf('orders').locator('td').last().locator('time').getAttribute('datetime');
    const task = cron.createTask(spreadOverMinute('*/5 * * * *', 'pull:orders'), () => undefined, { timezone: config.platform.timeZone });
    const expected = task.getNextRuns(1)[0]!;
    void task.destroy();
    expect(new Date(at!).getUTCSeconds()).toBe(expected.getUTCSeconds());
    expect(Math.abs(new Date(at!).getTime() - expected.getTime())).toBeLessThan(5 * 60_000);
    expect(spreadOverMinute('*/5 * * * *', 'pull:orders')).not.toMatch(/^0 /);
  });

  for (const width of [1024, 1440])
    it(`no serious or critical axe violation on any page at ${width} px`, async () => {
      await page.setViewportSize({ width, height: 900 });
      const found: Record<string, string[]> = {};
      for (const path of [
        '/',
        '/?q=list_1&state=healthy&sort=rows&dir=desc',
        '/lists/orders',
        '/lists/broken',
        '/budget',
        '/conflicts',
        `/conflicts/${conflictId}`,
      ]) {
        await page.goto(`${running.url}${path}`);
        const v = await seriousViolations(page);
        if (v.length) found[path] = v;
      }
      expect(found).toEqual({});
    }, 120_000);

  it("the overview and the list's page show failing re-reads (the HTTP 502, the attempts) and the platform's title", async () => {
    const title = String((await w.t.db('listsync.lists').where({ name: 'orders' }).first('title'))!.title);
    expect(title.length).toBeGreaterThan(0);
    await page.goto(`${running.url}/?q=orders`);
    const cells = await rowOf('orders').locator('td').allInnerTexts();
    expect(cells[0]).toBe(`orders\n${title}`);
    expect(cells[7]).toMatch(
      /3 events waiting.*\n?re-read failing for 2 event\(s\), up to 3 attempt\(s\): GET \/lists\/demo\/orders\/items\/1 failed: HTTP 502 \(attempt 1\)/s,
    );
    await page.goto(`${running.url}/lists/orders`);
    expect(await page.locator('main').innerText()).toContain(`“${title}” on the platform`);
    const realtime = page.locator('h2:has-text("Real time") + p');
    expect(await realtime.innerText()).toMatch(
      /subscribed; 3 events waiting.*re-read failing for 2 event\(s\), up to 3 attempt\(s\): .*HTTP 502/s,
    );
  });

  it('the overview fits 1440 px: no sideways scroll of the page or of its table', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${running.url}/`);
    // A string: the test's TypeScript has no DOM types; this runs in the page.
    const widths = (await page.evaluate(
      `(() => { const s = document.querySelector('.scroll'); return { page: document.documentElement.scrollWidth, table: s.scrollWidth, box: s.clientWidth }; })()`,
    )) as { page: number; table: number; box: number };
    expect(widths.page).toBeLessThanOrEqual(1440);
    expect(widths.table).toBeLessThanOrEqual(widths.box);
  });

  it('every scrollable region is reached from the keyboard and named', async () => {
    await page.goto(`${running.url}/lists/orders`);
    const regions = await page
      .locator('.scroll')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('tabindex'), e.getAttribute('aria-label')]));
    expect(regions.length).toBeGreaterThan(0);
    for (const [tabindex, label] of regions) {
      expect(tabindex).toBe('0');
      expect(label).toBeTruthy();
    }
  });

  it('filters by name and state on the server, and pages within the filter', async () => {
    await page.goto(`${running.url}/`);
    await page.getByLabel('Name contains').fill('list_04');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(new URL(page.url()).searchParams.get('q')).toBe('list_04');
    expect(await names()).toEqual(NAMES.filter((n) => n.startsWith('list_04')));
    await page.goto(`${running.url}/?state=degraded`);
    const degraded = await names();
    expect(degraded).toContain('broken');
    expect(degraded).toContain('orders'); // its conflict is open
    expect(degraded).not.toContain('list_002');
    // Never pulled is degraded: list_003 to list_499.
    await page.goto(`${running.url}/?q=LIST_&state=degraded`);
    expect(await page.locator('.summary').innerText()).toMatch(/497\s+lists/);
    expect(await names()).toHaveLength(100);
    await page.getByRole('link', { name: 'next →' }).click();
    const next = new URL(page.url()).searchParams;
    expect([next.get('q'), next.get('state'), next.get('page')]).toEqual(['LIST_', 'degraded', '2']);
    expect((await names())[0]).toBe('list_103');
  });

  it('sorts by any column both ways from its header link, without JavaScript', async () => {
    const noScript = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1440, height: 900 } });
    const p = await noScript.newPage();
    await p.goto(`${running.url}/?token=${CONSOLE_TOKEN}`);
    await p.getByRole('link', { name: /^List/ }).click();
    expect(await p.locator('thead th').first().getAttribute('aria-sort')).toBe('ascending');
    expect((await p.locator('tbody tr td:first-child a').allInnerTexts()).slice(0, 2)).toEqual(['broken', 'list_002']);
    await p.getByRole('link', { name: /^List/ }).click();
    expect(await p.locator('thead th').first().getAttribute('aria-sort')).toBe('descending');
    expect((await p.locator('tbody tr td:first-child a').allInnerTexts())[0]).toBe('orders');
    await p.getByRole('link', { name: /^Rows/ }).click();
    await p.getByRole('link', { name: /^Rows/ }).click();
    expect((await p.locator('tbody tr td:first-child a').allInnerTexts())[0]).toMatch(/^(orders|list_002)$/);
    await p.getByRole('link', { name: /^Schedule/ }).click();
    expect((await p.locator('tbody tr td:first-child a').allInnerTexts()).slice(0, 2)).toEqual(['orders', 'list_002']); // "*/5 * * * *" < "0 * * * *"
    await p.getByRole('link', { name: /^Schedule/ }).click();
    expect((await p.locator('tbody tr td:first-child a').allInnerTexts())[0]).toBe('list_002');
    for (const column of ['Health', 'Fresh as of', 'Last run', 'Changes', 'Open conflicts', 'Real time']) {
      await p.getByRole('link', { name: new RegExp(`^${column}`) }).click();
      expect(await p.locator('tbody tr').count()).toBe(100);
    }
    await noScript.close();
  });
});
