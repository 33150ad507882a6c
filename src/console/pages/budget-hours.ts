/**
 * The budget page's day: per account, a bar chart of every request per hour
 * (`listsync.request_minutes`) with the account's hourly limit in its
 * description, and the figures by hour and source beneath.
 */
import type { Config } from '../../config.js';
import type { HourRequests } from '../../store/request-minutes.js';
import { barChart } from '../chart.js';
import { dataTable, html, type SafeHtml } from '../html.js';

export const DAY_HOURS = 24;

export function budgetHours(config: Config, rows: readonly HourRequests[], now: Date): SafeHtml {
  const hourTo = new Date(Math.floor(now.getTime() / 3600_000) * 3600_000 + 3600_000);
  const hourFrom = new Date(hourTo.getTime() - DAY_HOURS * 3600_000);
  return html`${config.accounts.map((a, i) => {
    const mine = rows.filter((r) => r.account === a.name);
    const limit = Math.floor(a.platform.requestsPerSecond * 3600);
    const byHour = new Map<number, number>();
    for (const r of mine) byHour.set(r.hour.getTime(), (byHour.get(r.hour.getTime()) ?? 0) + r.requests);
    const points = [...byHour].map(([at, value]) => ({ at: new Date(at), value }));
    const total = mine.reduce((s, r) => s + r.requests, 0);
    const title = `Requests per hour over the last day, account ${a.name}`;
    return html`<figure>
        ${barChart(`hours-${i}`, title, `Every platform request of account ${a.name} per hour (limit ${limit} an hour); ${total} in all.`, points, hourFrom, hourTo, 'req')}
        <figcaption>
          Requests per hour on account <code>${a.name}</code> (limit ${limit.toLocaleString('en-US')} an hour): ${total} in the last day.
        </figcaption>
      </figure>
      <details>
        <summary>The figures</summary>
        ${dataTable(
          `Requests per hour and source, account ${a.name}`,
          ['Hour (UTC)', 'Source', 'Requests', 'Retries'],
          mine.map((r) => [r.hour.toISOString().slice(0, 16), r.source, r.requests, r.retries]),
          'no requests in the last day',
        )}
      </details>`;
  })}`;
}
