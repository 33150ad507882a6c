/**
 * The overview: one row per configured list, degraded first — health in
 * words and colour with the reasons, freshness, the last run, rows, changes,
 * conflicts, real time and the schedule with its next fire. One query
 * (src/store/console-overview.ts) per page of 100 lists.
 */
import type { ListConfig } from '../../config.js';
import { namesAccounts } from '../../accounts.js';
import { overviewRows, type OverviewRow } from '../../store/console-overview.js';
import { ago, duration, fromNow } from '../page-format.js';
import { dataTable, html, pager, type SafeHtml } from '../html.js';
import { nextFire } from '../next-fire.js';
import { PAGE_SIZE, pageOf, type PageContext } from './page-context.js';

const HEADERS = [
  'List',
  'Health',
  'Fresh as of',
  'Last run',
  'Rows (estimate)',
  'Changes pending / failed',
  'Open conflicts',
  'Real time',
  'Schedule',
];

export async function overviewPage(ctx: PageContext, url: URL): Promise<{ title: string; body: SafeHtml }> {
  const page = pageOf(url);
  const { config } = ctx;
  const byName = new Map(config.lists.map((l) => [l.name, l]));
  const rows = await overviewRows(ctx.db, {
    lists: config.lists.map((l) => ({ name: l.name, table: l.table ?? l.name })),
    mirrorSchema: config.database.schema,
    maxLagMinutes: config.serve.maxLagMinutes,
    realtimeStaleAfterSeconds: config.serve.realtimeStaleAfterSeconds,
    offset: (page - 1) * PAGE_SIZE,
    limit: PAGE_SIZE,
  });
  const total = rows[0]?.total ?? config.lists.length;
  const degraded = rows[0]?.degraded_total ?? 0;
  const body = html`<h1>Lists</h1>
    <div class="summary" data-refresh>
      <div><strong>${total}</strong> lists</div>
      <div class="${degraded ? 'degraded' : 'healthy'}"><strong>${degraded}</strong> degraded</div>
      <div><strong>${total - degraded}</strong> healthy</div>
    </div>
    ${dataTable(
      'Every list, degraded first',
      HEADERS,
      rows.map((r) => overviewCells(r, byName.get(r.name)!, ctx)),
      config.lists.length ? 'none on this page' : 'no lists in the config',
    )}
    ${pager('/', page, PAGE_SIZE, total)}`;
  return { title: 'Overview', body };
}

function overviewCells(r: OverviewRow, list: ListConfig, ctx: PageContext): (SafeHtml | string | number)[] {
  const health = r.problems.length
    ? html`<span class="badge degraded">degraded</span><span class="why">${r.problems.join(', ')}</span>`
    : html`<span class="badge healthy">healthy</span>`;
  const fresh = r.last_pull_at ? ago(r.last_pull_at, ctx.now) : html`<span class="muted">never pulled</span>`;
  const lastRun = r.last_status
    ? html`${r.last_job} <strong>${r.last_status}</strong> ${ago(r.last_started_at, ctx.now)}${
          r.last_error ? html`<pre class="error">${r.last_error.slice(0, 300)}</pre>` : ''
        }`
    : html`<span class="muted">no run yet</span>`;
  return [
    namesAccounts(ctx.config)
      ? html`<a href="/lists/${encodeURIComponent(r.name)}">${r.name}</a> <span class="muted">account ${list.account}</span>`
      : html`<a href="/lists/${encodeURIComponent(r.name)}">${r.name}</a>`,
    health,
    fresh,
    lastRun,
    r.rows === null ? '—' : r.rows,
    `${r.pending} / ${r.failed}`,
    r.conflicts ? html`<a href="/conflicts">${r.conflicts}</a>` : 0,
    realtimeCell(r, list, ctx),
    scheduleCell(list, ctx),
  ];
}

function realtimeCell(r: OverviewRow, list: ListConfig, ctx: PageContext): SafeHtml {
  if (!list.realtime && r.subscriptions === 0 && r.waiting === 0) return html`<span class="muted">off</span>`;
  const sub = r.subscriptions > 0 ? 'subscribed' : 'not subscribed';
  const waiting = r.waiting ? html`${r.waiting} events waiting, oldest ${duration(r.oldest_waiting_seconds)}` : html`no events waiting`;
  const applied = r.last_applied_at ? html`<span class="muted">; last applied ${ago(r.last_applied_at, ctx.now)}</span>` : '';
  return html`${sub}; ${waiting}${applied}`;
}

function scheduleCell(list: ListConfig, ctx: PageContext): SafeHtml {
  const pull = list.schedule.pull;
  if (!pull) return html`<span class="muted">not scheduled</span>`;
  const next = nextFire(pull, ctx.config.platform.timeZone, ctx.now);
  return html`pull <code>${pull}</code>; next ${fromNow(next, ctx.now)}`;
}
