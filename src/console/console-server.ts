/**
 * The console: its own HTTP listener (`serve.console`, never the webhook
 * port), pages drawn on the server from what listsync stores, and actions
 * (settling a conflict; queueing a list's job, src/console/job-actions.ts) as
 * POSTs with a CSRF token.
 *
 * Invariants:
 * - every path asks for access first (src/console/access.ts): without it, 401
 *   whatever the path (test/console/console-http.test.ts › "without the token every console path is 401");
 * - pages carry no secret: the API key, the database URL and the console token
 *   never reach a page, and the token in `?token=` is swapped for a cookie and
 *   dropped from the address (› "no page or asset holds a secret");
 * - a refused action changes nothing and says why (403 bad CSRF, 409 moved or settled).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import { coerceError, UsageError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { itemVersionNumber } from '../platform/item-identity.js';
import { withRequestSource } from '../platform/request-source.js';
import { startHttp } from '../serve/routes.js';
import { ConflictReadError, settleConflict } from '../conflicts/resolve.js';
import { createAccess, type ConsoleAccess } from './access.js';
import { queueFromConsole } from './job-actions.js';
import { CSS, SCRIPT } from './assets.js';
import { html, type SafeHtml } from './html.js';
import { layout } from './layout.js';
import { budgetPage } from './pages/budget-page.js';
import { conflictPage, conflictsPage } from './pages/conflicts-page.js';
import { listPage } from './pages/list-page.js';
import { overviewPage } from './pages/overview-page.js';
import type { PageContext } from './pages/page-context.js';

export interface ConsoleOptions {
  config: Config;
  db: Knex;
  client: PlatformClient;
  logger: Logger;
  host: string;
  port: number;
  /** Required from every client; undefined: loopback clients only. */
  token?: string;
  clock?: () => Date;
}

export interface RunningConsole {
  url: string;
  close(): Promise<void>;
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

const MAX_FORM_BYTES = 16 * 1024;

export async function startConsole(opts: ConsoleOptions): Promise<RunningConsole> {
  const access = createAccess(opts.token);
  const handler = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const verdict = access.check(req, url);
    if (verdict.kind === 'redirect') {
      res.writeHead(303, { ...SECURITY_HEADERS, location: verdict.location, 'set-cookie': verdict.cookie });
      res.end();
      return;
    }
    if (verdict.kind === 'refused') {
      const extra: Record<string, string> =
        verdict.status === 401 && access.tokenRequired ? { 'www-authenticate': 'Bearer realm="listsync console"' } : {};
      send(res, verdict.status, page('Sign in', '', refusedBody(verdict.reason)), extra);
      return;
    }
    const ctx: PageContext = {
      db: opts.db,
      config: opts.config,
      now: opts.clock?.() ?? new Date(),
      csrf: access.csrfFor(verdict.credential),
    };
    // The console's own platform reads count as `console` in the request tally (a run it starts counts as its job).
    await withRequestSource('console', () => route(req, res, url, ctx, { ...opts, access, credential: verdict.credential }));
  };
  const http = await startHttp({ routes: { '/': handler }, logger: opts.logger, host: opts.host, port: opts.port });
  return { url: http.url, close: () => http.close() };
}

type RouteDeps = ConsoleOptions & { access: ConsoleAccess; credential: string };

async function route(req: IncomingMessage, res: ServerResponse, url: URL, ctx: PageContext, deps: RouteDeps): Promise<void> {
  const path = url.pathname;
  const method = req.method ?? 'GET';
  const resolve = /^\/conflicts\/(\d{1,15})\/resolve$/.exec(path);
  if (resolve) {
    if (method !== 'POST')
      return send(res, 405, page('Not allowed', '', html`<p>Use the buttons on the conflict’s page.</p>`), { allow: 'POST' });
    return resolveAction(req, res, Number(resolve[1]), ctx, deps);
  }
  const jobs = /^\/lists\/([^/]+)\/jobs$/.exec(path);
  if (jobs && method === 'POST') return jobAction(req, res, safeDecode(jobs[1]!), deps);
  if (method !== 'GET' && method !== 'HEAD')
    return send(res, 405, page('Not allowed', '', html`<p>Pages are read with GET.</p>`), { allow: 'GET' });
  if (path === '/assets/console.css') return sendAsset(res, 'text/css; charset=utf-8', CSS);
  if (path === '/assets/console.js') return sendAsset(res, 'text/javascript; charset=utf-8', SCRIPT);
  if (path === '/' || path === '') return sendPage(res, '/', await overviewPage(ctx, url));
  if (path === '/budget') return sendPage(res, '/budget', await budgetPage(ctx));
  if (path === '/conflicts') return sendPage(res, '/conflicts', await conflictsPage(ctx, url));
  const conflict = /^\/conflicts\/(\d{1,15})$/.exec(path);
  if (conflict) {
    const drawn = await conflictPage(ctx, Number(conflict[1]), noticeOf(url));
    return drawn ? sendPage(res, '/conflicts', drawn) : notFound(res, `No conflict ${conflict[1]}.`);
  }
  const list = /^\/lists\/([^/]+)$/.exec(path);
  if (list) {
    const name = safeDecode(list[1]!);
    const cfg = deps.config.lists.find((l) => l.name === name);
    return cfg ? sendPage(res, '/', await listPage(ctx, cfg, url)) : notFound(res, `No list named "${name}" in the config.`);
  }
  return notFound(res, 'No such page.');
}

async function resolveAction(req: IncomingMessage, res: ServerResponse, id: number, ctx: PageContext, deps: RouteDeps): Promise<void> {
  const form = await readForm(req);
  if (!form || !deps.access.csrfValid(deps.credential, form.get('csrf'))) {
    return send(
      res,
      403,
      page(
        'Refused',
        '/conflicts',
        html`<p>
          The form’s token is missing or wrong; nothing was changed. <a href="/conflicts/${id}">Reload the conflict</a> and try again.
        </p>`,
      ),
    );
  }
  const keep = form.get('keep');
  const seen = itemVersionNumber(form.get('seen_version'));
  if ((keep !== 'local' && keep !== 'remote') || seen === null) {
    return send(res, 400, page('Bad request', '/conflicts', html`<p>The form must say which side to keep and the version it showed.</p>`));
  }
  try {
    const said = await settleConflict(deps, id, keep, { seenVersion: seen });
    deps.logger.info({ conflict: id, keep }, said);
    const queued = keep === 'local' && / is queued but not applied yet /.test(said) ? '&sent=0' : '';
    res.writeHead(303, { ...SECURITY_HEADERS, location: `/conflicts/${id}?settled=${keep}${queued}` });
    res.end();
  } catch (err) {
    const e = coerceError(err);
    if (e instanceof ConflictReadError) return platformFailed(res, id, e);
    if (!(e instanceof UsageError)) throw e;
    const drawn = await conflictPage(ctx, id, html`<p class="notice bad" role="alert">${e.message}</p>`);
    send(
      res,
      409,
      drawn ? layout(drawn.title, '/conflicts', drawn.body) : page('Refused', '/conflicts', html`<p role="alert">${e.message}</p>`),
    );
  }
}

/** The platform failed the read before a resolve: a console page that says what failed and that nothing changed. */
function platformFailed(res: ServerResponse, id: number, e: ConflictReadError): void {
  send(
    res,
    502,
    page(
      'The platform did not answer',
      '/conflicts',
      html`<h1>Nothing was changed</h1>
        <p role="alert">${e.message}</p>
        <p><a href="/conflicts/${id}">Back to conflict ${id}</a></p>`,
    ),
  );
}

async function jobAction(req: IncomingMessage, res: ServerResponse, name: string, deps: RouteDeps): Promise<void> {
  const list = deps.config.lists.find((l) => l.name === name);
  if (!list) return notFound(res, `No list named "${name}" in the config.`);
  const form = await readForm(req);
  if (!form || !deps.access.csrfValid(deps.credential, form.get('csrf')))
    return send(
      res,
      403,
      page('Refused', '/', html`<p>The form’s token is missing or wrong; nothing was queued. Reload the list’s page and try again.</p>`),
    );
  const done = await queueFromConsole(deps, list, form);
  if ('refused' in done) return send(res, 400, page('Bad request', '/', html`<p role="alert">${done.refused}</p>`));
  res.writeHead(303, { ...SECURITY_HEADERS, location: done.location });
  res.end();
}

function noticeOf(url: URL): SafeHtml | undefined {
  const keep = url.searchParams.get('settled');
  if (keep === 'local' && url.searchParams.get('sent') === '0')
    return html`<p class="notice bad" role="status">
      Settled: the local change is kept and queued, but the platform did not take it yet; a push sends it (“listsync push”, or the list’s
      push schedule).
    </p>`;
  if (keep === 'local') return html`<p class="notice" role="status">Settled: the local change is kept and was sent to the platform.</p>`;
  if (keep === 'remote')
    return html`<p class="notice" role="status">Settled: the platform’s version is kept; the mirror row took its values.</p>`;
  return undefined;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function refusedBody(reason: string): SafeHtml {
  return html`<h1>Sign in</h1>
    <p role="alert">${reason}.</p>
    <p>
      Open the console’s address with <code>?token=</code> and the console token once (it is then kept in a cookie), or send
      <code>Authorization: Bearer</code> with it.
    </p>`;
}

const page = (title: string, current: string, body: SafeHtml) => layout(title, current, body);

function sendPage(res: ServerResponse, current: string, drawn: { title: string; body: SafeHtml }): void {
  send(res, 200, layout(drawn.title, current, drawn.body));
}

function notFound(res: ServerResponse, what: string): void {
  send(
    res,
    404,
    page(
      'Not found',
      '',
      html`<h1>Not found</h1>
        <p>${what}</p>
        <p><a href="/">Back to the overview</a></p>`,
    ),
  );
}

function send(res: ServerResponse, status: number, body: SafeHtml, headers: Record<string, string> = {}): void {
  const text = body.text;
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    ...headers,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function sendAsset(res: ServerResponse, type: string, text: string): void {
  res.writeHead(200, { ...SECURITY_HEADERS, 'cache-control': 'no-cache', 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
