/**
 * The account's request budget: requests over the last hour against the
 * limit, by job, and what the shared limiter holds (`listsync.rate_budget`,
 * every column shown as stored, so columns a later migration adds appear
 * without a change here and their absence is no error).
 */
import { budgetAccount } from '../../platform/shared-budget.js';
import { requestsByJob, rateBudgetRow } from '../../store/console-budget.js';
import { RATE_BUDGET_TABLE } from '../../store/rate-budget.js';
import { ago, duration } from '../format.js';
import { dataTable, html, type SafeHtml } from '../html.js';
import type { PageContext } from './page-context.js';

/** Columns of the limiter's row shown elsewhere or not for people (the slot log is a list of instants). */
const NOT_SHOWN = new Set(['account', 'recent_slots_ms']);

export async function budgetPage(ctx: PageContext): Promise<{ title: string; body: SafeHtml }> {
  const p = ctx.config.platform;
  const account = budgetAccount(p);
  const [byJob, limiter] = await Promise.all([requestsByJob(ctx.db, 60), rateBudgetRow(ctx.db, account)]);
  const used = byJob.reduce((s, j) => s + j.requests, 0);
  const limit = Math.floor(p.requestsPerSecond * 3600);
  const share = limit ? Math.round((used / limit) * 1000) / 10 : 0;
  const slots = Array.isArray(limiter?.recent_slots_ms) ? (limiter.recent_slots_ms as unknown[]).length : undefined;
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
      <div><strong>${byJob.reduce((s, j) => s + j.retries, 0)}</strong> retries (429s, timeouts)</div>
    </div>
    ${dataTable(
      'Requests in the last hour, by job (runs active in the hour, counted whole)',
      ['Job', 'Runs', 'Requests', 'Share of the hour’s limit', 'Retries'],
      byJob.map((j) => [j.job, j.runs, j.requests, `${limit ? Math.round((j.requests / limit) * 1000) / 10 : 0}%`, j.retries]),
      'no runs in the last hour',
    )}
    <h2>What the limiter holds</h2>
    ${
      limiter
        ? dataTable(
            `The shared limiter’s row (${RATE_BUDGET_TABLE})`,
            ['Setting', 'Value'],
            [
              ...Object.entries(limiter)
                .filter(([k]) => !NOT_SHOWN.has(k))
                .map(([k, v]) => [k.replace(/_/g, ' '), limiterValue(k, v, ctx.now)]),
              ...(slots === undefined ? [] : [['slots in the sliding log', slots]]),
            ],
          )
        : html`<p class="empty">No process has sent a request on this account yet.</p>`
    }`;
  return { title: 'Budget', body };
}

const n = (v: number): string => v.toLocaleString('en-US');

function limiterValue(key: string, v: unknown, now: Date): SafeHtml | string {
  if (v === null || v === undefined) return '—';
  if (v instanceof Date)
    return v.getTime() > now.getTime() ? html`${v.toISOString()} (in ${duration((v.getTime() - now.getTime()) / 1000)})` : ago(v, now);
  if (key.endsWith('_ms') && typeof v === 'number') return `${v} ms`;
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}
