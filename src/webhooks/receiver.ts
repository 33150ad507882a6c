/**
 * The webhook receiver: a route handler for `serve` at `/hooks/`.
 *
 * `POST /hooks/<token>`, checked in this order; every failed check answers a
 * 4xx, stores nothing and triggers nothing:
 *
 * | check                                                          | answer |
 * |----------------------------------------------------------------|--------|
 * | method is POST                                                 | 405    |
 * | `<token>` belongs to a subscription                            | 404    |
 * | `Channel` header present and equal to the subscription's       | 403    |
 * | `Type` header an integer equal to the subscription's           | 400    |
 * |   (item event subscriptions: both checked only when sent, and  |        |
 * |   Type may be any event the subscription covers)               |        |
 * | `Content-Type` is `application/json` (charset utf-8 if given;  | 415    |
 * |   not checked for item event subscriptions)                    |        |
 * | body within `serve.webhookBodyLimitBytes` (Content-Length is   | 413    |
 * |   checked first, then bytes are counted while reading; reading |        |
 * |   stops at the limit)                                          |        |
 * | body is UTF-8 text holding one JSON object                     | 400    |
 * | nested at most MAX_JSON_DEPTH deep (PostgreSQL cannot store    | 400    |
 * |   deeper ones: a 503 would be redelivered forever)             |        |
 *
 * A wrong Channel is refused as 403 (the caller is not the sender the
 * subscription expects); a missing, non-integer or different Type as 400 (a
 * malformed callback for this subscription).
 *
 * An accepted event is stored durably in `listsync.webhook_inbox` (with the
 * callbacks that arrive with it, in one transaction: src/webhooks/inbox-batcher.ts)
 * with a
 * dedup key = sha256(subscription id, Channel, Type, canonical body), where
 * the canonical body is Postgres' `jsonb` text (key order and whitespace do
 * not matter; numbers keep every digit). The same delivery within
 * `serve.webhookDedupWindowMinutes` is stored once: the check and the insert
 * run in one transaction under an advisory lock on the key, so two copies
 * arriving at the same moment are serialised. The answer is 200
 * `{"ok":true,"duplicate":false|true}`. A burst of callbacks is logged as
 * counts, one line per subscription every few seconds while they arrive
 * (src/webhooks/receipt-summary.ts): only the first new one of a quiet spell
 * has a line of its own.
 *
 * A new event whose body names a list item (`ListDataID`) is handed to
 * `onItemEvent` after the answer (serve asks for an early pull), and the row's
 * `processed_at` is set; an event that names no item needs nothing more and
 * is stored as processed. The token and the body are never logged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import { pgCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { markProcessed } from '../store/webhook-inbox.js';
import { InboxBatcher } from './inbox-batcher.js';
import { ReceiptSummary } from './receipt-summary.js';
import { subscriptionByToken, type SubscriptionRow } from '../store/webhook-subscriptions.js';
import { HOOKS_PATH } from './subscribe.js';

export type RejectReason = 'method' | 'unknown_token' | 'channel' | 'type' | 'content_type' | 'too_large' | 'bad_body';
export type ReceiveOutcome =
  | { result: 'accepted'; duplicate: boolean }
  | { result: 'rejected'; reason: RejectReason; status: number }
  | { result: 'error'; status: number };

export interface ItemEvent {
  inboxId: number;
  subscriptionId: number;
  resource: string;
  channel: string;
  type: number;
  /** The item ID as text (all digits kept). */
  listDataId: string;
  /** The event kind the body named (`Event`), if any. */
  event: string | null;
}

export interface ReceiverOptions {
  db: Knex;
  /**
   * Where callbacks are stored (default `db`): serve hands a small pool of its own, opened at start
   * and kept open, so a burst never opens a database connection nor waits for the jobs' pool.
   */
  storeDb?: Knex;
  config: Config;
  logger: Logger;
  /**
   * Called once per new (not duplicate) event that names a list item. The
   * event is then marked processed, unless the handler answers 'deferred'
   * (it marks the event itself once acted on).
   */
  onItemEvent?: (event: ItemEvent) => void | 'deferred' | Promise<void | 'deferred'>;
  /** Called for every request with its outcome (metrics). */
  onOutcome?: (outcome: ReceiveOutcome) => void;
  /**
   * A callback could not be stored (answered 503): the list of its item subscription may miss its event
   * (null: the subscription could not be looked up either, any list may).
   */
  onRefused?: (listName: string | null) => void;
  /** Accepted callbacks are logged as counts (new, duplicates) once per this many ms; each one at debug. Default 10 s. */
  summaryEveryMs?: number;
}

export type HookHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;

/**
 * Item event callbacks carry the item; which headers come with them is not
 * documented. For a list's item subscription, Channel and Type are checked
 * only when sent, and Type may name any event the subscription covers
 * (created-or-modified, 3, covers created, 1, and modified, 2).
 */
const ITEM_TYPES_COVERED: Readonly<Record<number, readonly number[]>> = { 3: [1, 2, 3] };

/** Headers kept with an event (never credentials or cookies). */
const KEPT_HEADERS = ['channel', 'type', 'content-type', 'content-length', 'user-agent', 'date', 'x-request-id', 'x-forwarded-for'];
/** Deepest nesting of objects and arrays a body may have; PostgreSQL's jsonb refuses very deep ones (54001). */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of `[` and `{` in JSON text, ignoring brackets inside strings. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** After a 413, at most this many further bytes are read (and discarded) so the sender can read the answer; then the connection is cut. */
const DRAIN_LIMIT_BYTES = 1024 * 1024;
const DRAIN_TIMEOUT_MS = 2000;

/** Why a callback is refused: the answer's status, the reason counted and the message logged and sent. */
interface Refusal {
  status: number;
  refused: RejectReason;
  message: string;
}

const refusal = (status: number, refused: RejectReason, message: string): Refusal => ({ status, refused, message });

/**
 * The Channel and Type headers, checked against the subscription. Item callbacks may leave them
 * out (the subscription's own are taken); a Type a list subscription covers is accepted.
 */
function checkHeaders(req: IncomingMessage, sub: SubscriptionRow): { channel: string; typeText: string } | Refusal {
  const itemEvents = sub.list_name !== null;
  const channel = header(req, 'channel') ?? (itemEvents ? sub.channel : undefined);
  if (channel === undefined) return refusal(403, 'channel', 'the Channel header is missing');
  if (channel !== sub.channel) return refusal(403, 'channel', "the Channel header does not match the subscription's channel");

  const typeText = header(req, 'type') ?? (itemEvents ? String(sub.type) : undefined);
  if (typeText === undefined) return refusal(400, 'type', 'the Type header is missing');
  if (!/^\s*-?\d{1,9}\s*$/.test(typeText)) return refusal(400, 'type', 'the Type header is not an integer');
  const covered = itemEvents ? (ITEM_TYPES_COVERED[sub.type] ?? [sub.type]) : [sub.type];
  if (!covered.includes(Number(typeText))) return refusal(400, 'type', "the Type header does not match the subscription's type");
  return { channel, typeText };
}

/** The body, read up to `limit` bytes: UTF-8 text of one JSON object no deeper than `MAX_JSON_DEPTH`. */
async function readJsonObject(req: IncomingMessage, limit: number, itemEvents: boolean): Promise<string | Refusal> {
  // Item callbacks' content type is not documented: their body must still be one JSON object.
  if (!itemEvents && !isJsonContentType(header(req, 'content-type')))
    return refusal(415, 'content_type', 'Content-Type must be application/json');

  const declared = header(req, 'content-length');
  if (declared !== undefined && (!/^\d+$/.test(declared) || Number(declared) > limit)) {
    return refusal(413, 'too_large', `the body exceeds ${limit} bytes`);
  }
  const body = await readLimited(req, limit);
  if (body === 'too_large') return refusal(413, 'too_large', `the body exceeds ${limit} bytes`);

  const text = decodeUtf8(body);
  if (text === undefined) return refusal(400, 'bad_body', 'the body is not UTF-8 text');
  if (jsonDepth(text) > MAX_JSON_DEPTH) return refusal(400, 'bad_body', `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refusal(400, 'bad_body', 'the body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return refusal(400, 'bad_body', 'the body must be a JSON object');
  return text;
}

export function createHookReceiver(options: ReceiverOptions): HookHandler {
  const { config } = options;
  const db = options.storeDb ?? options.db;
  const log = options.logger.child({ component: 'webhooks' });
  const limit = config.serve.webhookBodyLimitBytes;
  const batcher = new InboxBatcher({ db, windowMinutes: config.serve.webhookDedupWindowMinutes });
  const subscriptions = new TokenCache(db);
  const receipts = new ReceiptSummary(log, options.summaryEveryMs ?? 10_000);

  const outcome = (o: ReceiveOutcome): void => {
    try {
      options.onOutcome?.(o);
    } catch {
      /* metrics must never break the receiver */
    }
  };

  const reject = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    reason: RejectReason,
    message: string,
    sub?: SubscriptionRow,
    extraHeaders: Record<string, string> = {},
  ): void => {
    log.warn({ status, reason, subscription: sub?.id, remote: req.socket.remoteAddress }, `webhook rejected: ${message}`);
    send(res, status, { ok: false, error: message }, { connection: 'close', ...extraHeaders });
    discardRest(req);
    outcome({ result: 'rejected', reason, status });
  };
  const receiving: Receiving = { options: { ...options, db }, log, outcome };

  return async (req, res, url) => {
    const started = performance.now();
    // The list whose callback this is: undefined before the token is looked up, null for a workflow subscription.
    let refusedList: string | null | undefined = null;
    try {
      if (req.method !== 'POST') return reject(req, res, 405, 'method', 'only POST is accepted here', undefined, { allow: 'POST' });

      const token = url.pathname.startsWith(HOOKS_PATH) ? url.pathname.slice(HOOKS_PATH.length) : '';
      refusedList = undefined; // a lookup that fails (the database away) leaves the list unknown
      const sub = /^[A-Za-z0-9_-]{8,128}$/.test(token) ? await subscriptions.get(token) : undefined;
      if (!sub) return reject(req, res, 404, 'unknown_token', 'no subscription has this callback path');

      refusedList = sub.list_name;
      const checked = checkHeaders(req, sub);
      if ('refused' in checked) return reject(req, res, checked.status, checked.refused, checked.message, sub);
      const text = await readJsonObject(req, limit, sub.list_name !== null);
      if (typeof text !== 'string') return reject(req, res, text.status, text.refused, text.message, sub);
      const { channel, typeText } = checked;

      let stored: { id: number; duplicate: boolean; listDataId: string | null; event: string | null };
      try {
        stored = await batcher.store({ subscriptionId: sub.id, channel, type: Number(typeText), headers: keptHeaders(req), body: text });
      } catch (err) {
        // 22xxx: data exceptions, e.g. a \u0000 escape that jsonb cannot hold.
        if (pgCode(err)?.startsWith('22'))
          return reject(req, res, 400, 'bad_body', 'the body is JSON that cannot be stored (e.g. a \\u0000 escape)', sub);
        throw err;
      }
      send(res, 200, { ok: true, duplicate: stored.duplicate });
      outcome({ result: 'accepted', duplicate: stored.duplicate });
      log[receipts.add(sub.id, stored.duplicate) === 'log' ? 'info' : 'debug'](
        {
          subscription: sub.id,
          inboxId: stored.id,
          channel,
          type: sub.type,
          event: stored.event,
          duplicate: stored.duplicate,
          ms: Math.round((performance.now() - started) * 10) / 10,
        },
        stored.duplicate ? 'webhook event was a duplicate delivery' : 'webhook event stored',
      );
      if (!stored.duplicate && stored.listDataId !== null && options.onItemEvent) {
        await dispatch(receiving, options.onItemEvent, {
          inboxId: stored.id,
          subscriptionId: sub.id,
          resource: sub.resource,
          channel,
          type: sub.type,
          listDataId: stored.listDataId,
          event: stored.event,
        });
      }
    } catch (err) {
      answerFailure(receiving, req, res, err, refusedList);
    }
  };
}

/** What the receiver's steps outside the request handler share. */
interface Receiving {
  options: ReceiverOptions;
  log: Logger;
  outcome: (o: ReceiveOutcome) => void;
}

/** A 503 so the platform may deliver again; the list (when known) is to be caught up, its event maybe never coming back. */
function answerFailure(
  r: Receiving,
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  refusedList: string | null | undefined,
): void {
  r.log.error({ code: pgCode(err), error: errorSummary(err) }, 'webhook receiver failed; answered 503 so the platform may deliver again');
  if (!res.headersSent) send(res, 503, { ok: false, error: 'the event could not be stored; try again' }, { connection: 'close' });
  else res.end();
  discardRest(req);
  r.outcome({ result: 'error', status: 503 });
  if (refusedList !== null) {
    try {
      r.options.onRefused?.(refusedList ?? null);
    } catch {
      /* a catch-up request must never break the receiver */
    }
  }
}

/** Hands a stored item event on; marked processed unless its handler deferred it. A failure leaves it unprocessed. */
async function dispatch(r: Receiving, fn: NonNullable<ReceiverOptions['onItemEvent']>, event: ItemEvent): Promise<void> {
  try {
    if ((await fn(event)) === 'deferred') return;
    await markProcessed(r.options.db, [event.inboxId]);
  } catch (err) {
    r.log.error({ inboxId: event.inboxId, error: errorSummary(err) }, 'handling a webhook item event failed; it stays unprocessed');
  }
}

/** How long a subscription found by its token is used without asking the database again. */
const TOKEN_CACHE_MS = 5000;

/**
 * Subscriptions by callback token, each kept `TOKEN_CACHE_MS` once found: a burst of callbacks asks
 * the database once per subscription, not once per callback. An unknown token is asked every time
 * (a subscription made since is found at once); a removed one is refused within the cache time.
 */
class TokenCache {
  private readonly found = new Map<string, { sub: SubscriptionRow; at: number }>();

  constructor(private readonly db: Knex) {}

  async get(token: string): Promise<SubscriptionRow | undefined> {
    const now = Date.now();
    const hit = this.found.get(token);
    if (hit && now - hit.at < TOKEN_CACHE_MS) return hit.sub;
    const sub = await subscriptionByToken(this.db, token);
    if (sub) this.found.set(token, { sub, at: now });
    else this.found.delete(token);
    return sub;
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  if (Array.isArray(v)) return v.length === 1 ? v[0] : undefined;
  return v;
}

function keptHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const v = req.headers[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const [type, ...params] = value.split(';').map((s) => s.trim().toLowerCase());
  if (type !== 'application/json') return false;
  for (const p of params) {
    const [k, v] = p.split('=').map((s) => s.trim());
    if (k === 'charset' && v !== undefined && v.replace(/"/g, '') !== 'utf-8' && v.replace(/"/g, '') !== 'utf8') return false;
  }
  return true;
}

/** Reads the body, stopping as soon as it passes `limit` bytes. */
function readLimited(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      fn();
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) finish(() => resolve('too_large'));
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish(() => resolve(Buffer.concat(chunks, size)));
    const onError = (err: Error): void => finish(() => reject(err));
    const onClose = (): void => finish(() => reject(new Error('the connection closed before the body ended')));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Lets the sender finish writing (so it can read our answer) without keeping anything; cuts it off past a limit. */
function discardRest(req: IncomingMessage): void {
  if (req.readableEnded || req.destroyed) return;
  let drained = 0;
  const timer = setTimeout(() => req.socket.destroy(), DRAIN_TIMEOUT_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) {
      clearTimeout(timer);
      req.socket.destroy();
    }
  });
  req.on('end', () => clearTimeout(timer));
  req.on('close', () => clearTimeout(timer));
  req.on('error', () => clearTimeout(timer));
  req.resume();
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
function decodeUtf8(buf: Buffer): string | undefined {
  try {
    return utf8.decode(buf);
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/**
 * An error's class, Postgres code and message. Never the body: the statements
 * carry it as a bind parameter (not in the message), and Postgres' data
 * errors (22xxx), whose detail can quote it, are answered 400 before this.
 */
function errorSummary(err: unknown): string {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const code = typeof e?.code === 'string' ? ` ${e.code}` : '';
  const message = typeof e?.message === 'string' && !code.startsWith(' 22') ? `: ${e.message}` : '';
  return `${name}${code}${message}`;
}
