/** The frame of every console page: header with the sections, the main content, the stylesheet and script from /assets/. */
import { html, type SafeHtml } from './html.js';

const SECTIONS = [
  ['/', 'Overview'],
  ['/conflicts', 'Conflicts'],
  ['/budget', 'Budget'],
] as const;

export function layout(title: string, current: string, body: SafeHtml): SafeHtml {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · listsync</title>
        <link rel="stylesheet" href="/assets/console.css" />
        <script src="/assets/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to the content</a>
        <header>
          <a class="brand" href="/">listsync</a>
          <nav aria-label="sections">
            ${SECTIONS.map(([href, label]) => html`<a href="${href}" ${current === href ? html` aria-current="page"` : ''}>${label}</a>`)}
          </nav>
        </header>
        <main id="main" tabindex="-1">${body}</main>
      </body>
    </html>`;
}
