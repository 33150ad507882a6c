/**
 * The console's job buttons on a list's page: **Pull now**, **Reconcile** and
 * **Backfill from…**, each a POST with the page's CSRF token to
 * `/lists/<name>/jobs`, which queues the job on the queue every serve
 * process's workers share (any worker runs it; it joins a job of the same
 * kind already queued) and sends the browser back to the list's page with a
 * notice. The section also shows the list's jobs queued or running.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { JobKind } from '../engine/job-payload.js';
import { queueJobs } from '../engine/job-request.js';
import { openJobsOfList } from '../engine/job-rows.js';
import type { Logger } from '../logger.js';
import { ago } from './page-format.js';
import { dataTable, html, type SafeHtml } from './html.js';
import type { PageContext } from './pages/page-context.js';

const ASKABLE: Record<string, { job: JobKind; label: string }> = {
  pull: { job: 'pull', label: 'Pull now' },
  reconcile: { job: 'reconcile', label: 'Reconcile' },
  backfill: { job: 'backfill', label: 'Backfill from…' },
};

const STATE_WORDS: Record<string, string> = { created: 'queued', retry: 'waiting to retry', active: 'running' };

/** The list page's "Jobs" section: the list's open jobs, the buttons, and the notice of a job just queued. */
export async function jobSection(ctx: PageContext, list: ListConfig, url: URL): Promise<SafeHtml> {
  const open = await openJobsOfList(ctx.db, list.name).catch(() => undefined);
  const action = `/lists/${encodeURIComponent(list.name)}/jobs`;
  const queued = url.searchParams.get('queued');
  const notice =
    queued && queued in ASKABLE
      ? html`<p class="notice" role="status">${ASKABLE[queued]!.label.replace('…', '')}: queued; the first free worker runs it.</p>`
      : html``;
  const button = (kind: string, extra: SafeHtml = html``) =>
    html`<form class="job" method="post" action="${action}">
      <input type="hidden" name="csrf" value="${ctx.csrf}" />
      <input type="hidden" name="job" value="${kind}" />
      ${extra}
      <button type="submit">${ASKABLE[kind]!.label}</button>
    </form>`;
  return html`<h2>Jobs</h2>
    ${notice}
    ${
      open === undefined
        ? html`<p class="muted">The job queue cannot be read right now.</p>`
        : dataTable(
            'The list’s jobs queued or running',
            ['Job', 'State', 'Asked'],
            open.map((j) => [j.job, STATE_WORDS[j.state] ?? j.state, ago(j.createdOn, ctx.now)]),
            'none queued or running',
          )
    }
    ${button('pull')} ${button('reconcile')}
    ${button('backfill', html`<label for="backfill-from">from</label> <input id="backfill-from" type="date" name="from" required />`)}`;
}

/** Queues the job a list page's form asks for; the address to send the browser to, or what was wrong (400). */
export async function queueFromConsole(
  deps: { db: Knex; config: Config; logger: Logger },
  list: ListConfig,
  form: URLSearchParams,
): Promise<{ location: string } | { refused: string }> {
  const kind = form.get('job') ?? '';
  const asked = ASKABLE[kind];
  if (!asked) return { refused: 'The form must name a job: pull, reconcile or backfill.' };
  const from = form.get('from') ?? '';
  if (asked.job === 'backfill' && !/^\d{4}-\d{2}-\d{2}$/.test(from)) return { refused: 'A backfill needs its first day (yyyy-mm-dd).' };
  const [id] = await queueJobs(deps, [{ job: asked.job, list, ...(asked.job === 'backfill' ? { from } : {}) }]);
  deps.logger.info({ list: list.name, job: asked.job, jobId: id }, 'console: job queued');
  return { location: `/lists/${encodeURIComponent(list.name)}?queued=${kind}` };
}
