/**
 * The overview's filter and sort, as query parameters (`?q=ord&state=degraded&sort=rows&dir=desc`),
 * so they work without JavaScript, survive a reload and page with the pager: a search form and
 * a link in each column header (its `aria-sort` says the current order). Unknown values are
 * ignored, never passed on. (test/console/console-a11y.test.ts)
 */
import { OVERVIEW_SORTS, type OverviewInput, type OverviewSortKey } from '../store/console-overview.js';
import { html, type Header, type SafeHtml } from './html.js';

export interface OverviewControls {
  name: string;
  state?: 'degraded' | 'healthy';
  sort?: { key: OverviewSortKey; dir: 'asc' | 'desc' };
}

export function overviewControls(url: URL): OverviewControls {
  const state = url.searchParams.get('state');
  const key = url.searchParams.get('sort');
  const dir = url.searchParams.get('dir') === 'desc' ? 'desc' : 'asc';
  return {
    name: (url.searchParams.get('q') ?? '').trim().slice(0, 200),
    state: state === 'degraded' || state === 'healthy' ? state : undefined,
    sort: key !== null && Object.hasOwn(OVERVIEW_SORTS, key) ? { key: key as OverviewSortKey, dir } : undefined,
  };
}

/** What the store is asked for. */
export function overviewFilter(c: OverviewControls): Pick<OverviewInput, 'name' | 'state' | 'sort'> {
  return { name: c.name, state: c.state, sort: c.sort };
}

/** The parameters that keep this filter and sort (for the pager and the header links). */
export function controlsQuery(c: OverviewControls, sort = c.sort): URLSearchParams {
  const q = new URLSearchParams();
  if (c.name) q.set('q', c.name);
  if (c.state) q.set('state', c.state);
  if (sort) {
    q.set('sort', sort.key);
    q.set('dir', sort.dir);
  }
  return q;
}

export function filterForm(c: OverviewControls): SafeHtml {
  const option = (value: string, label: string) =>
    html`<option value="${value}" ${(c.state ?? '') === value ? html`selected` : ''}>${label}</option>`;
  return html`<form class="filter" method="get" action="/" role="search" aria-label="Filter the lists">
    <label>Name contains <input type="search" name="q" value="${c.name}" /></label>
    <label
      >State
      <select name="state">
        ${option('', 'any')} ${option('degraded', 'degraded')} ${option('healthy', 'healthy')}
      </select></label
    >
    ${c.sort ? html`<input type="hidden" name="sort" value="${c.sort.key}" /><input type="hidden" name="dir" value="${c.sort.dir}" />` : ''}
    <button type="submit">Filter</button>
    ${c.name || c.state ? html`<a href="/">show every list</a>` : ''}
  </form>`;
}

/** A column header that sorts by its column: ascending first, the other way when it is the current one. */
export function sortHeader(label: string, key: OverviewSortKey, c: OverviewControls): Header {
  const current = c.sort?.key === key ? c.sort.dir : undefined;
  const dir = current === 'asc' ? 'desc' : 'asc';
  const href = `/?${controlsQuery(c, { key, dir }).toString()}`;
  const arrow = current === 'asc' ? ' ▲' : current === 'desc' ? ' ▼' : '';
  return {
    label: html`<a href="${href}">${label}${arrow}<span class="skip"> (sort ${dir === 'asc' ? 'ascending' : 'descending'})</span></a>`,
    sort: current === 'asc' ? 'ascending' : current === 'desc' ? 'descending' : undefined,
  };
}
