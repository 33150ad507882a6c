/**
 * HTML for the console: a tagged template that escapes every interpolated
 * value unless it is already `SafeHtml`, so a field name or value from the
 * platform or a user can never become markup
 * (test/console/console-http.test.ts › "values from the platform are escaped").
 */

/** Markup built by `html` (or a trusted constant): interpolated as is. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for an element's content and for a quoted attribute. */
export function esc(value: unknown): string {
  const text = value === null || value === undefined ? '' : value instanceof Date ? value.toISOString() : String(value);
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

type Part = SafeHtml | string | number | boolean | null | undefined | Date | readonly Part[];

function render(part: Part): string {
  if (part instanceof SafeHtml) return part.text;
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join('');
  if (part === null || part === undefined || part === false) return '';
  return esc(part);
}

/** `html\`<td>${value}</td>\``: values escaped, nested `html` kept. */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((v, i) => (out += render(v) + strings[i + 1]!));
  return new SafeHtml(out);
}

/** A column header: its text, or markup (a sort link) with the column's `aria-sort`. */
export type Header = string | { label: SafeHtml; sort?: 'ascending' | 'descending' };

const headerCell = (h: Header): SafeHtml =>
  typeof h === 'string' ? html`<th scope="col">${h}</th>` : html`<th scope="col" aria-sort="${h.sort ?? 'none'}">${h.label}</th>`;

/**
 * A table with a caption and column headers; `cells` are rows of parts. Its scroll container is a
 * named region the keyboard reaches (tabindex=0), so a table wider than the window scrolls from the
 * keyboard in every browser (axe: scrollable-region-focusable; test/console/console-a11y.test.ts).
 */
export function dataTable(caption: string, headers: readonly Header[], rows: readonly (readonly Part[])[], empty = 'none'): SafeHtml {
  if (rows.length === 0) return html`<p class="empty">${caption}: ${empty}</p>`;
  return html`<div class="scroll" tabindex="0" role="region" aria-label="${caption}">
    <table>
      <caption>
        ${caption}
      </caption>
      <thead>
        <tr>
          ${headers.map(headerCell)}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr>
              ${r.map((c) => html`<td>${c}</td>`)}
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/** Links to the previous and next page of a paged table (`?page=N`, from 1), keeping the other parameters of `query` (a filter, a sort). */
export function pager(path: string, page: number, pageSize: number, total: number, query?: URLSearchParams): SafeHtml {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  if (pages === 1) return html``;
  const link = (n: number, label: string) => {
    const q = new URLSearchParams(query);
    q.set('page', String(n));
    return html`<a href="${path}?${q.toString()}">${label}</a>`;
  };
  return html`<nav class="pager" aria-label="pages">
    ${page > 1 ? link(page - 1, '← previous') : ''} <span>page ${page} of ${pages}</span> ${page < pages ? link(page + 1, 'next →') : ''}
  </nav>`;
}
