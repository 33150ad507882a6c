import { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { handleAdmin } from './admin.js';
import { type ApiReply, errorReply, matchV1Route, type V1Route } from './api.js';
import { ApiError, STATUS } from './api-error.js';
import { envelopeJson } from './envelope.js';
import type { EmulatorState } from './emulator-state.js';
import type { FaultDecision } from './faults.js';
import { readBody, sendJson, sendText } from './http-io.js';
import { type RequestLogEntry, truncateBody } from './request-log.js';
import { coerceError } from '../errors.js';

/**
 * The HTTP front: /_admin goes to the admin API; /v1 requests are logged, then
 * authenticated, rate-limited, exposed to faults and latency, and handled;
 * GET /healthz answers 200 {"status":"ok"} without an API key (for probes).
 */

const JSON_TYPE = 'application/json; charset=utf-8';

function apiKeyOf(req: IncomingMessage, url: URL): string | undefined {
  const h = req.headers['apikey'];
  const header = Array.isArray(h) ? h[0] : h;
  if (header !== undefined && header !== '') return header;
  const q = url.searchParams.get('apiKey');
  return q === null || q === '' ? undefined : q;
}

function errorPage(status: number): string {
  const text = status === 502 ? 'Bad Gateway' : status === 503 ? 'Service Unavailable' : 'Internal Server Error';
  return `<!DOCTYPE html>\n<html><head><title>${status} ${text}</title></head><body><center><h1>${status} ${text}</h1></center><hr><center>nginx</center></body></html>\n`;
}

/** A /v1 request in named steps: log it, answer at once (no route, no key, rate limit), or let faults and the handler answer. */
async function handleV1(state: EmulatorState, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const method = req.method ?? 'GET';
  const path = url.pathname;
  const apiKey = apiKeyOf(req, url);
  const route = matchV1Route(method, path);
  const entry: RequestLogEntry = state.log.begin(method, path, route?.name ?? 'unknown', apiKey);
  const exchange = new Exchange(state, req, res, entry);

  // Route and key are decided on arrival; the rate limit counts the request when its handler
  // runs, after a delay that varies (the limit's jitter), as a real server's would: by default
  // after the request's latency too (`countAt: 'handler'`), which is then not added again.
  const latencyFirst = route !== null && state.countsAfterLatency() && state.faults.appliesTo(path);
  const early = await arrivalReply(state, route, apiKey, method, path, latencyFirst);

  let body: string;
  try {
    body = await readBody(req);
  } catch (e) {
    exchange.send(errorReply(new ApiError(STATUS.badRequest, `Cannot read the request body: ${coerceError(e).message}`, 413)));
    return;
  }
  const logged = truncateBody(body);
  if (logged !== undefined) entry.body = logged;

  if (early !== null || route === null) {
    exchange.send(early as ApiReply);
    return;
  }
  const faultsApply = state.faults.appliesTo(path);
  const fault = await faultBeforeApplying(state, exchange, route, faultsApply, latencyFirst);
  if (fault === ANSWERED) return;

  let reply: ApiReply;
  try {
    reply = route.handle(state, { body, faultsApply, query: url.searchParams });
  } catch (e) {
    reply = {
      httpStatus: 500,
      body: envelopeJson(STATUS.internal, 'null', `Emulator error: ${e instanceof Error ? e.message : String(e)}`),
      envelopeStatus: STATUS.internal,
    };
  }
  await answerAfterApplying(state, exchange, reply, fault?.kind ?? null, faultsApply && req.method === 'PATCH');
}

/** How a request ends: an answer sent (unless the client left), or the connection dropped; the request log told either way. */
class Exchange {
  private closedEarly = false;

  constructor(
    private readonly state: EmulatorState,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly entry: RequestLogEntry,
  ) {
    res.on('close', () => {
      if (!res.writableFinished) this.closedEarly = true;
      if (entry.finishedAt === null && this.closedEarly) state.log.finish(entry, null, null);
    });
  }

  send(reply: ApiReply, contentType = JSON_TYPE): void {
    const entry = this.entry;
    if (reply.fault !== undefined) entry.fault = reply.fault;
    if (reply.pageIndex !== undefined) entry.pageIndex = reply.pageIndex;
    if (this.res.destroyed || this.closedEarly) {
      this.state.log.finish(entry, null, null);
      return;
    }
    sendText(this.res, reply.httpStatus, reply.body, contentType, reply.headers ?? {});
    this.state.log.finish(entry, reply.httpStatus, reply.envelopeStatus);
  }

  drop(fault: string): void {
    this.entry.fault = fault;
    this.req.socket.destroy();
    this.state.log.finish(this.entry, null, null);
  }
}

/** The answer decided on arrival (no such route, no or a wrong key, the rate limit); null to go on. */
async function arrivalReply(
  state: EmulatorState,
  route: V1Route | null,
  apiKey: string | undefined,
  method: string,
  path: string,
  latencyFirst: boolean,
): Promise<ApiReply | null> {
  if (!route) return { httpStatus: 404, body: envelopeJson(404, 'null', `No such endpoint: ${method} ${path}`), envelopeStatus: 404 };
  if (apiKey === undefined)
    return errorReply(new ApiError(STATUS.unauthorized, 'Missing apiKey: send the API key in the "apiKey" request header', 401));
  if (!state.store.apiKeys.includes(apiKey)) return errorReply(new ApiError(STATUS.unauthorized, 'Invalid apiKey', 401));
  const jitter = state.handlerDelayMs();
  const beforeCount = (latencyFirst ? state.faults.latency() : 0) + jitter;
  if (beforeCount > 0) await state.timers.sleep(beforeCount);
  const reply = rateLimitReply(state, apiKey, path);
  const hold = state.answerHoldMs(jitter);
  if (hold > 0) await state.timers.sleep(hold);
  return reply;
}

/** The request was answered (or dropped) by a fault before its handler ran. */
const ANSWERED = Symbol('answered');

/** Faults that act before the handler: a 429 storm, a drop, latency, a timeout, an error page; else the fault left for after. */
async function faultBeforeApplying(
  state: EmulatorState,
  exchange: Exchange,
  route: V1Route,
  faultsApply: boolean,
  latencyDone: boolean,
): Promise<FaultDecision | null | typeof ANSWERED> {
  if (faultsApply) {
    const storm = state.faults.stormRetryAfter(Date.now());
    if (storm !== null) {
      exchange.send({
        ...errorReply(
          new ApiError(STATUS.rateLimited, `Rate limit exceeded; retry after ${storm} s`, 429, { 'Retry-After': String(storm) }),
        ),
        fault: 'rateLimitStorm',
      });
      return ANSWERED;
    }
  }
  const fault = faultsApply ? ((route.mutation ? state.faults.takeLostAnswer() : null) ?? state.faults.decide()) : null;
  const kind = fault?.kind ?? null;
  const beforeApply = !(route.mutation && fault?.afterApply === true);

  if (kind === 'drop' && beforeApply) {
    exchange.drop('drop');
    return ANSWERED;
  }
  const latency = faultsApply && !latencyDone ? state.faults.latency() : 0;
  if (latency > 0) await state.timers.sleep(latency);
  if (kind === 'timeout' && beforeApply) {
    await state.timers.sleep(state.faults.settings.timeoutMs);
    exchange.drop('timeout');
    return ANSWERED;
  }
  if (kind === 'error' && fault) {
    const status = fault.errorStatus;
    if (fault.htmlBody)
      exchange.send({ httpStatus: status, body: errorPage(status), envelopeStatus: null, fault: 'error' }, 'text/html; charset=utf-8');
    else
      exchange.send({
        httpStatus: status,
        body: envelopeJson(STATUS.internal, 'null', 'Internal server error'),
        envelopeStatus: STATUS.internal,
        fault: 'error',
      });
    return ANSWERED;
  }
  return fault;
}

/** The handler's reply, or what a fault left for after it (a lost answer, a timeout, a malformed body), after an update's answer delay. */
async function answerAfterApplying(
  state: EmulatorState,
  exchange: Exchange,
  reply: ApiReply,
  kind: FaultDecision['kind'] | null,
  delaysAnswer: boolean,
): Promise<void> {
  if (kind === 'drop') {
    exchange.drop('drop-after-apply');
    return;
  }
  if (kind === 'timeout') {
    await state.timers.sleep(state.faults.settings.timeoutMs);
    exchange.drop('timeout-after-apply');
    return;
  }
  if (kind === 'malformed') {
    exchange.send({ ...reply, body: state.faults.malform(reply.body), fault: 'malformed' });
    return;
  }
  const answerDelay = delaysAnswer ? state.faults.settings.updateAnswerDelayMs : 0;
  if (answerDelay > 0) await state.timers.sleep(answerDelay);
  exchange.send(reply);
}

/** A 429 when the account's limit (or the one-off `rateLimitAtRequest` fault) refuses the request; null to go on. */
function rateLimitReply(state: EmulatorState, apiKey: string, path: string): ApiReply | null {
  if (state.faults.appliesTo(path) && state.faults.takeRateLimitAt()) {
    const reply = errorReply(new ApiError(STATUS.rateLimited, 'Rate limit exceeded; retry after 1 s', 429, { 'Retry-After': '1' }));
    return { ...reply, fault: 'rateLimitAtRequest' };
  }
  const decision = state.limiter?.take(apiKey);
  if (!decision || decision.allowed) return null;
  const s = decision.retryAfterSeconds;
  const perSecond = state.limiter?.settings.perSecond ?? 0;
  return errorReply(
    new ApiError(STATUS.rateLimited, `Rate limit exceeded: at most ${perSecond} requests per second per API key; retry after ${s} s`, 429, {
      'Retry-After': String(s),
    }),
  );
}

export function createRequestListener(state: EmulatorState): RequestListener {
  return (req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://emulator.local');
    } catch {
      sendText(res, 400, envelopeJson(STATUS.badRequest, 'null', 'Bad request URL'));
      return;
    }
    const path = url.pathname;
    if (path === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    const task =
      path === '/_admin' || path.startsWith('/_admin/')
        ? handleAdmin(state, req, res, url)
        : path === '/v1' || path.startsWith('/v1/')
          ? handleV1(state, req, res, url)
          : Promise.resolve(
              sendText(
                res,
                404,
                envelopeJson(
                  404,
                  'null',
                  `No such endpoint: ${req.method ?? 'GET'} ${path} (the API is under /v1, the admin API under /_admin)`,
                ),
              ),
            );
    task.catch((e: unknown) => {
      sendText(res, 500, envelopeJson(STATUS.internal, 'null', `Emulator error: ${e instanceof Error ? e.message : String(e)}`));
    });
  };
}
