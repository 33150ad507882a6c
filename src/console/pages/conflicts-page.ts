/**
 * Conflicts: the open ones (paged), and one conflict field by field — base,
 * local and platform values, the policy — with buttons to keep local or keep
 * remote. The form carries the platform version the page showed; settling
 * runs `settleConflict` (src/conflicts/resolve.ts), as the CLI does. The
 * platform side drawn is the latest listsync read (a pull, real time, the
 * re-read before a resolve bring it up to date); fields are named by display
 * name with the slot beside it.
 */
import type { Config } from '../../config.js';
import type { Knex } from '../../db.js';
import { loadTableMapping } from '../../mirror/list-registry.js';
import { getConflict, openConflictsPage } from '../../store/conflicts.js';
import { conflictFields } from '../../conflicts/recording.js';
import { ago, itemValue } from '../page-format.js';
import { dataTable, html, pager, type SafeHtml } from '../html.js';
import { PAGE_SIZE, pageOf, type PageContext } from './page-context.js';

const POLICY: Record<string, string> = {
  'remote-wins': "remote-wins: the platform's version is kept, the local change saved with the conflict",
  'local-wins': "local-wins: the local change is sent over the platform's version",
  manual: 'manual: the local change is held until someone decides here or with "listsync conflicts resolve"',
};

export async function conflictsPage(ctx: PageContext, url: URL): Promise<{ title: string; body: SafeHtml }> {
  const page = pageOf(url);
  const rows = await openConflictsPage(ctx.db, { offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE });
  const body = html`<h1>Open conflicts</h1>
    ${dataTable(
      'Open conflicts, oldest first',
      ['Conflict', 'List', 'Item', 'Change', 'Made on version', 'Platform at', 'Fields', 'Policy', 'Recorded'],
      rows.map((c) => [
        html`<a href="/conflicts/${c.id}">conflict ${c.id}</a>`,
        c.list_name,
        c.item_id,
        c.op,
        c.base_version ?? '—',
        c.remote_version ?? '—',
        c.op === 'delete' ? '(row deleted)' : Object.keys(c.local).join(', '),
        c.policy,
        ago(c.created_at, ctx.now),
      ]),
      'none open',
    )}
    ${pager('/conflicts', page, PAGE_SIZE, rows[0]?.total ?? 0)}`;
  return { title: 'Conflicts', body };
}

/** One conflict, field by field; undefined when there is no such conflict. */
export async function conflictPage(
  ctx: PageContext,
  id: number,
  notice?: SafeHtml,
): Promise<{ title: string; body: SafeHtml } | undefined> {
  const c = await getConflict(ctx.db, id);
  if (!c) return undefined;
  const mapping = await mappingOf(ctx.db, ctx.config, c.list_name);
  const fields = mapping
    ? conflictFields(mapping, c)
    : Object.entries(c.local).map(([column, local]) => ({
        field: column,
        name: column,
        label: column,
        column,
        base: null,
        local,
        remote: null,
      }));
  const open = c.status === 'open';
  const body = html`<h1>Conflict ${c.id}</h1>
    ${notice ?? ''}
    <p>
      List <a href="/lists/${encodeURIComponent(c.list_name)}">${c.list_name}</a>, item <code>${c.item_id}</code>: a local
      ${c.op === 'delete' ? 'delete (the row’s content below)' : 'change'} made on version ${c.base_version ?? '—'}; the platform was at
      version ${c.remote_version ?? '—'} when listsync last read it (the conflict was recorded ${ago(c.created_at, ctx.now)}).
    </p>
    <p>Policy: ${POLICY[c.policy] ?? c.policy}.</p>
    <p>
      Status:
      <strong>${c.status}</strong
      >${c.resolution ? html` (kept ${c.resolution})` : ''}${c.resolved_at ? html`, ${ago(c.resolved_at, ctx.now)}` : ''}.
    </p>
    ${dataTable(
      'Field by field',
      ['Field', 'Column', 'Base (the change was made on)', 'Local', 'Platform'],
      fields.map((f) => [f.label, f.column, itemValue(f.base), itemValue(f.local), itemValue(f.remote)]),
    )}
    ${open ? resolveForms(c.id, c.remote_version, ctx.csrf) : html`<p><a href="/conflicts">Back to the open conflicts</a></p>`}`;
  return { title: `Conflict ${c.id}`, body };
}

function resolveForms(id: number, seenVersion: number | string | null, csrf: string): SafeHtml {
  const form = (keep: 'local' | 'remote', label: string, hint: string, cls: string) =>
    html`<form class="keep" method="post" action="/conflicts/${id}/resolve">
      <input type="hidden" name="csrf" value="${csrf}" />
      <input type="hidden" name="keep" value="${keep}" />
      <input type="hidden" name="seen_version" value="${seenVersion ?? ''}" />
      <button type="submit" class="${cls}" aria-describedby="hint-${keep}">${label}</button>
      <span id="hint-${keep}" class="muted">${hint}</span>
    </form>`;
  return html`<h2>Decide</h2>
    ${form('local', 'Keep local', 'the local change is sent at once, against the platform’s current version', '')}
    ${form('remote', 'Keep remote', 'drop the local change; the mirror row takes the platform’s values', 'secondary')}`;
}

async function mappingOf(db: Knex, config: Config, listName: string) {
  return loadTableMapping(db, config.database.schema, listName);
}
