/**
 * The account's request budget: every request listsync made over the last
 * hour (runs, the real-time applier's re-reads, retries, the console's own
 * reads: `listsync.request_minutes`, written by every process's clients) by
 * source against each account's limit; the runs of the hour by job; and what
 * the shared limiter learned from 429 answers (`readLimiterState`, the reader
 * `status` and `/metrics` use: bursts on or off, the learned margin, 429s
 * seen, whether the configured limit looks too high), as a process starting
 * now would take it.
 */
import { budgetAccount } from '../../platform/shared-budget.js';
import { requestsByJob } from '../../store/console-budget.js';
import { readLimiterState, type LimiterState } from '../../store/rate-budget.js';
import { requestsBySource, requestsPerHour, type SourceRequests } from '../../store/request-minutes.js';
import { budgetHours, DAY_HOURS } from './budget-hours.js';
import type { Config } from '../../config.js';
import { ago, duration } from '../page-format.js';
import { dataTable, html, type SafeHtml } from '../html.js';
import type { PageContext } from './page-context.js';

export async function budgetPage(ctx: PageContext): Promise<{ title: string; body: SafeHtml }> {
  const p = ctx.config.platform;
  const account = budgetAccount(p);
  const [byJob, bySource, hours, limiters] = await Promise.all([
    requestsByJob(ctx.db, 60),
    requestsBySource(ctx.db, 60),
    requestsPerHour(ctx.db, DAY_HOURS),
    readLimiterState(ctx.db),
  ]);
  const limiter = limiters.find((l) => l.account === account);
  const first = ctx.config.accounts[0]?.name;
  const mine = bySource.filter((r) => r.account === first);
  const used = mine.reduce((s, r) => s + r.requests, 0);
  const limit = Math.floor(p.requestsPerSecond * 3600);
  const share = limit ? Math.round((used / limit) * 1000) / 10 : 0;
  const body = html`<h1>Request budget</h1>
    <p>
      Account <code>${account.length > 24 ? `${account.slice(0, 20)}…` : account}</code>: ${p.requestsPerSecond} requests per second at most
      (${n(limit)} an hour), bursts of ${p.burst}, a margin of ${Math.round(p.rateMargin * 1000)} ms per second window.
    </p>
    <div class="summary">
      <div><strong>${n(used)}</strong> requests in the last hour</div>
      <div>
        <strong>${share}%</strong> <label for="use">of ${n(limit)}</label>
        <meter id="use" min="0" max="${limit}" low="${Math.round(limit * 0.7)}" high="${Math.round(limit * 0.9)}" value="${used}">
          ${share}%
        </meter>
      </div>
      <div><strong>${mine.reduce((s, r) => s + r.retries, 0)}</strong> retries (429s, timeouts)</div>
    </div>
    ${dataTable(
      'Requests in the last hour, by account and source (every request: runs by job, real time, the console, commands, retries included)',
      ['Account', 'Source', 'Requests', 'Share of the account’s hourly limit', 'Retries'],
      sourceRows(ctx.config, bySource),
      'no requests in the last hour',
    )}
    ${budgetHours(ctx.config, hours, ctx.now)}
    ${dataTable(
      'Runs in the last hour, by job (runs active in the hour, counted whole, as the runs recorded them)',
      ['Job', 'Runs', 'Requests', 'Share of the hour’s limit', 'Retries'],
      byJob.map((j) => [j.job, j.runs, j.requests, `${limit ? Math.round((j.requests / limit) * 1000) / 10 : 0}%`, j.retries]),
      'no runs in the last hour',
    )}
    <h2>What the limiter learned</h2>
    ${
      limiter
        ? dataTable(`What every process of this account starts from`, ['Setting', 'Value'], learnedRows(limiter, ctx.now))
        : html`<p class="empty">No process has sent a request on this account yet.</p>`
    }`;
  return { title: 'Budget', body };
}

const n = (v: number): string => v.toLocaleString('en-US');

/** One row per account and source, each share against that account's own limit (an account no longer configured: no share). */
function sourceRows(config: Config, rows: readonly SourceRequests[]): (string | number)[][] {
  return rows.map((r) => {
    const rps = config.accounts.find((a) => a.name === r.account)?.platform.requestsPerSecond;
    const limit = rps ? Math.floor(rps * 3600) : 0;
    return [r.account, r.source, r.requests, limit ? `${Math.round((r.requests / limit) * 1000) / 10}% of ${n(limit)}` : '—', r.retries];
  });
}

/** The limiter's lessons in words (test/console/console-http.test.ts › "the budget page shows what the limiter learned"). */
function learnedRows(l: LimiterState, now: Date): (string | SafeHtml)[][] {
  const at = (d: Date | null): string | SafeHtml => (d ? ago(d, now) : 'never');
  return [
    ['Bursts', l.burstsAllowed ? 'on (no 429 has said otherwise)' : 'off (a 429 turned them off; they return slowly)'],
    ['Learned margin per window', `${l.marginMs} ms`],
    ['429 answers seen', String(l.throttledTotal)],
    ['Last 429', at(l.lastThrottledAt)],
    [
      'Paused until',
      l.pausedUntil
        ? html`${l.pausedUntil.toISOString()} (in ${duration((l.pausedUntil.getTime() - now.getTime()) / 1000)})`
        : 'not paused',
    ],
    [
      'Configured limit',
      l.limitTooHighAt
        ? html`looks higher than the platform allows (429s kept coming at the widened margin, ${ago(l.limitTooHighAt, now)}): lower
            <code>platform.requestsPerSecond</code>`
        : 'holds',
    ],
  ];
}
