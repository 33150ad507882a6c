/**
 * The overview: one row per configured list, degraded first — health in
 * words and colour with the reasons, freshness, the last run, rows, changes,
 * conflicts, real time and the schedule with its next fire. One query
 * (src/store/console-overview.ts) per page of 100 lists.
 */
import type { ListConfig } from '../../config.js';
import { namesAccounts } from '../../accounts.js';
import { overviewRows, type OverviewRow, type OverviewSortKey } from '../../store/console-overview.js';
import { controlsQuery, filterForm, overviewControls, overviewFilter, sortHeader } from '../overview-controls.js';
import { ago, duration, fromNow } from '../page-format.js';
import { dataTable, html, pager, type SafeHtml } from '../html.js';
import { nextFire } from '../next-fire.js';
import { spreadOverMinute } from '../../serve/scheduler.js';
import { PAGE_SIZE, pageOf, type PageContext } from './page-context.js';

/** The columns, each with the key it sorts by (overview-controls.ts). */
const COLUMNS: readonly [string, OverviewSortKey][] = [
  ['List', 'name'],
  ['Health', 'health'],
  ['Fresh as of', 'fresh'],
  ['Last run', 'last_run'],
  ['Rows (estimate)', 'rows'],
  ['Changes pending / failed', 'changes'],
  ['Open conflicts', 'conflicts'],
  ['Real time', 'realtime'],
  ['Schedule', 'schedule'],
];

export async function overviewPage(ctx: PageContext, url: URL): Promise<{ title: string; body: SafeHtml }> {
  const page = pageOf(url);
  const controls = overviewControls(url);
  const { config } = ctx;
  const byName = new Map(config.lists.map((l) => [l.name, l]));
  const rows = await overviewRows(ctx.db, {
    lists: config.lists.map((l) => ({ name: l.name, table: l.table ?? l.name })),
    mirrorSchema: config.database.schema,
    maxLagMinutes: config.serve.maxLagMinutes,
    realtimeStaleAfterSeconds: config.serve.realtimeStaleAfterSeconds,
    schedules: config.lists.map((l) => l.schedule.pull ?? ''),
    ...overviewFilter(controls),
    offset: (page - 1) * PAGE_SIZE,
    limit: PAGE_SIZE,
  });
  const filtered = Boolean(controls.name || controls.state);
  const total = rows[0]?.total ?? (filtered ? 0 : config.lists.length);
  const degraded = rows[0]?.degraded_total ?? 0;
  const body = html`<h1>Lists</h1>
    <div class="summary" data-refresh>
      <div><strong>${total}</strong> lists</div>
      <div class="${degraded ? 'degraded' : 'healthy'}"><strong>${degraded}</strong> degraded</div>
      <div><strong>${total - degraded}</strong> healthy</div>
    </div>
    ${filterForm(controls)}
    ${dataTable(
      filtered ? 'The lists that match' : controls.sort ? 'Every list' : 'Every list, degraded first',
      COLUMNS.map(([label, key]) => sortHeader(label, key, controls)),
      rows.map((r) => overviewCells(r, byName.get(r.name)!, ctx)),
      !config.lists.length ? 'no lists in the config' : filtered ? 'no list matches' : 'none on this page',
    )}
    ${pager('/', page, PAGE_SIZE, total, controlsQuery(controls))}`;
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
  const accountOf = namesAccounts(ctx.config) ? html` <span class="muted">account ${list.account}</span>` : '';
  const title = r.title ? html`<span class="title">${r.title}</span>` : '';
  return [
    html`<a href="/lists/${encodeURIComponent(r.name)}">${r.name}</a>${accountOf}${title}`,
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

export function realtimeCell(r: OverviewRow, list: ListConfig, ctx: PageContext): SafeHtml {
  if (!list.realtime && r.subscriptions === 0 && r.waiting === 0) return html`<span class="muted">off</span>`;
  const sub = r.subscriptions > 0 ? 'subscribed' : 'not subscribed';
  const waiting = r.waiting ? html`${r.waiting} events waiting, oldest ${duration(r.oldest_waiting_seconds)}` : html`no events waiting`;
  const applied = r.last_applied_at ? html`<span class="muted">; last applied ${ago(r.last_applied_at, ctx.now)}</span>` : '';
  return html`${sub}; ${waiting}${applied}${realtimeFailure(r)}`;
}

/** Re-reads that fail: how many events, the most attempts one has had, and the platform's answer (`HTTP 502 …`). */
export function realtimeFailure(r: Pick<OverviewRow, 'failing_events' | 'max_attempts' | 'realtime_error'>): SafeHtml | string {
  if (!r.failing_events) return '';
  return html`<span class="why"
    >re-read failing for ${r.failing_events} event(s), up to ${r.max_attempts}
    attempt(s)${r.realtime_error ? html`: ${r.realtime_error.slice(0, 200)}` : ''}</span
  >`;
}

function scheduleCell(list: ListConfig, ctx: PageContext): SafeHtml {
  const pull = list.schedule.pull;
  if (!pull) return html`<span class="muted">not scheduled</span>`;
  // As serve schedules it: a five-field expression fires at the second its job's name hashes to.
  const next = nextFire(spreadOverMinute(pull, `pull:${list.name}`), ctx.config.platform.timeZone, ctx.now);
  return html`pull <code>${pull}</code>; next ${fromNow(next, ctx.now)}`;
}
