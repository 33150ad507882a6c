/**
 * A list's page: its recent runs (paged), a chart of lag and of requests over
 * the last day, the schema-change log and the column mapping (field → column
 * → type, pinned in lists[].columns or derived from the platform's metadata),
 * and its jobs with the buttons that queue one (src/console/job-actions.ts).
 * All of it from what listsync stores; no platform request.
 */
import { mirrorSchemaOf, namesAccounts } from '../../accounts.js';
import { pinnedNames, pinnedTypes, type ListConfig } from '../../config.js';
import { readRegistry, type RegistryField } from '../../mirror/list-registry.js';
import { recentRuns, requestsPerHour, successfulPulls } from '../../store/console-list.js';
import { recentSchemaChanges } from '../../store/schema-changes.js';
import { overviewRows } from '../../store/console-overview.js';
import { realtimeCell } from './overview-page.js';
import { barChart, lineChart, type Point } from '../chart.js';
import { jobSection } from '../job-actions.js';
import { ago, duration } from '../page-format.js';
import { dataTable, html, pager, type SafeHtml } from '../html.js';
import { PAGE_SIZE, pageOf, type PageContext } from './page-context.js';

const DAY_HOURS = 24;

export async function listPage(ctx: PageContext, list: ListConfig, url: URL): Promise<{ title: string; body: SafeHtml }> {
  const page = pageOf(url);
  const [runs, pulls, hourly, changes, registry, [state]] = await Promise.all([
    recentRuns(ctx.db, list.name, { offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }),
    successfulPulls(ctx.db, list.name, DAY_HOURS),
    requestsPerHour(ctx.db, list.name, DAY_HOURS),
    recentSchemaChanges(ctx.db, { list: list.name, limit: 50 }),
    readRegistry(ctx.db, list.name),
    // The overview's row of this list alone: its real-time state (events waiting, failing re-reads).
    overviewRows(ctx.db, {
      lists: [{ name: list.name, table: list.table ?? list.name }],
      mirrorSchema: ctx.config.database.schema,
      maxLagMinutes: ctx.config.serve.maxLagMinutes,
      realtimeStaleAfterSeconds: ctx.config.serve.realtimeStaleAfterSeconds,
      offset: 0,
      limit: 1,
    }),
  ]);
  const path = `/lists/${encodeURIComponent(list.name)}`;
  const body = html`<h1>List ${list.name}</h1>
    <p class="muted">
      ${namesAccounts(ctx.config) ? `account ${list.account}: ` : ''}${registry?.title ? html`“${registry.title}” on the platform: ` : ''}${list.appID}/${list.listID}
      → ${mirrorSchemaOf(ctx.config, list)}.${list.table ?? list.name}; conflict policy
      ${list.conflictPolicy}${list.realtime ? '; real time on' : ''}
    </p>
    ${await jobSection(ctx, list, url)}
    <h2>Real time</h2>
    <p>${state ? realtimeCell(state, list, ctx) : html`<span class="muted">off</span>`}</p>
    <h2>The last day</h2>
    ${charts(ctx, pulls, hourly)}
    <h2>Runs</h2>
    ${dataTable(
      'Recent runs, newest first',
      ['Run', 'Job', 'Outcome', 'Started', 'Duration', 'Pages', 'Requests', 'Retries', 'Rows changed', 'Error'],
      runs.map((r) => [
        r.id,
        r.job,
        r.status,
        ago(r.started_at, ctx.now),
        r.finished_at ? duration((r.finished_at.getTime() - r.started_at.getTime()) / 1000) : 'running',
        r.pages,
        r.requests,
        r.retries,
        r.rows_changed,
        r.error ? html`<pre class="error">${r.error}</pre>` : '',
      ]),
      'no runs recorded',
    )}
    ${pager(path, page, PAGE_SIZE, runs[0]?.total ?? 0)}
    <h2>Schema changes</h2>
    ${dataTable(
      'Changes seen in the list’s fields, newest first',
      ['Seen', 'Kind', 'Field', 'Column', 'Before', 'After', 'What happened'],
      changes.map((c) => [ago(c.seenAt, ctx.now), c.kind, c.field ?? '', c.column ?? '', c.before ?? '', c.after ?? '', c.message]),
      'none recorded',
    )}
    <h2>Column mapping</h2>
    ${mappingTable(list, registry?.fields)}`;
  return { title: `List ${list.name}`, body };
}

function charts(
  ctx: PageContext,
  pulls: Awaited<ReturnType<typeof successfulPulls>>,
  hourly: { hour: Date; requests: number }[],
): SafeHtml {
  const to = ctx.now;
  const from = new Date(to.getTime() - DAY_HOURS * 3600_000);
  // Lag climbs from each pull's start and drops when the next one finishes.
  const lag: Point[] = [];
  const minutes = (a: Date, b: Date) => Math.max(0, (a.getTime() - b.getTime()) / 60_000);
  for (const p of pulls) {
    const at = p.finished_at < from ? from : p.finished_at;
    if (p.previous_start) lag.push({ at, value: minutes(p.finished_at, p.previous_start) });
    lag.push({ at, value: minutes(p.finished_at, p.started_at) });
  }
  const last = pulls[pulls.length - 1];
  if (last) lag.push({ at: to, value: minutes(to, last.started_at) });
  const requests = hourly.map((h) => ({ at: h.hour, value: h.requests }));
  const hourFrom = hourly[0]?.hour ?? from;
  const hourTo = new Date((hourly[hourly.length - 1]?.hour ?? to).getTime() + 3600_000);
  const total = requests.reduce((s, r) => s + r.value, 0);
  return html`<figure>
      ${lineChart('lag', 'Lag over the last day', `Minutes since the start of the last successful pull; ${pulls.length} successful pulls in the last day.`, lag, from, to, 'min')}
      <figcaption>
        Lag (minutes since the mirror last matched the platform): ${pulls.length} successful pulls finished in the last
        day${last ? html`; now ${duration(minutes(to, last.started_at) * 60)}` : ''}.
      </figcaption>
    </figure>
    <figure>
      ${barChart('requests', 'Requests per hour over the last day', `Platform requests of every job of this list per hour; ${total} in all.`, requests, hourFrom, hourTo, 'req')}
      <figcaption>Requests to the platform per hour (every job of this list): ${total} in the last day.</figcaption>
    </figure>
    <details>
      <summary>The figures</summary>
      ${dataTable(
        'Requests per hour',
        ['Hour (UTC)', 'Requests'],
        hourly.filter((h) => h.requests > 0).map((h) => [h.hour.toISOString().slice(0, 16), h.requests]),
        'no requests in the last day',
      )}
    </details>`;
}

function mappingTable(list: ListConfig, fields: readonly RegistryField[] | undefined): SafeHtml {
  if (!fields) return html`<p class="empty">Not mirrored yet: the first pull makes the table and its mapping.</p>`;
  const names = pinnedNames(list.columns);
  const types = pinnedTypes(list.columns);
  return dataTable(
    'Field → column → type',
    ['Field', 'Display name', 'Column', 'Type', 'Platform type', 'Column name', 'Column type', 'State'],
    fields.map((f) => [
      f.field,
      f.displayName ?? '',
      f.column,
      f.kind,
      [f.fieldType, f.type].filter(Boolean).join(' / '),
      f.fixed ? 'fixed' : names[f.field] !== undefined ? 'pinned' : 'derived',
      types[f.field] !== undefined
        ? 'pinned'
        : f.kind !== f.platformKind
          ? `widened from ${f.platformKind}`
          : `derived${f.kindSource ? ` (${f.kindSource})` : ''}`,
      f.removed ? (f.retired ? 'removed, slot reused' : 'removed on the platform; column kept') : f.system ? 'system' : 'mirrored',
    ]),
  );
}
