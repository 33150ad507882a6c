import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ApiError, STATUS, badRequest } from './api-error.js';
import { DEFAULT_DELIVERY_SOCKETS, DeliverySockets } from './delivery-sockets.js';
import { buildProjection, itemsJson } from './item-json.js';
import { Prng } from './prng.js';
import { nowEpochMs } from './request-log.js';
import type { ListData } from './store.js';

/**
 * List item events: subscriptions made with
 * `POST /v1/lists/{appID}/{listID}/hooks/{eventType}?channel=C` (event types
 * 1 created, 2 modified, 3 created or modified, 4 deleted) and their
 * callbacks: a POST to the callback URL with `Channel` and `Type` headers
 * whose body is the item itself (as a query returns it; for a delete, the
 * item as it was).
 *
 * Delivery behaves as a real platform might, each fault switchable through
 * `PUT /_admin/item-hooks/delivery`: a delay (plus jitter, which reorders
 * deliveries close in time), duplicates, refused deliveries retried with
 * backoff, and lost deliveries. Callbacks go out on at most `sockets`
 * kept-alive connections per callback host (0: a new connection for each,
 * all at once); a burst waits its turn in the emulator, never in the caller
 * that made the changes.
 */

export const ITEM_EVENT_TYPES = { created: 1, modified: 2, createdOrModified: 3, deleted: 4 } as const;
export type ItemChange = 'created' | 'modified' | 'deleted';

export interface ItemHook {
  Id: string;
  AppID: string;
  ListID: string;
  EventType: number;
  Channel: string;
  CallbackUrl: string;
  ColumnType: number | null;
  Created: string;
}

/** How the hook's ID comes back from a subscribe: in Data, in a Location header, or both. */
export type HookIdAnswer = 'data' | 'location' | 'both';

export interface ItemDeliverySettings {
  /** Every delivery waits this long before its first attempt. */
  delayMs: number;
  /** Plus a random 0..jitterMs: deliveries closer than this may arrive out of order. */
  jitterMs: number;
  /** Share of events delivered twice (the copy after another random delay). */
  duplicateRate: number;
  /** Share of events never delivered. */
  lossRate: number;
  /** Attempts per delivery when the receiver refuses (non-2xx, no answer). */
  maxAttempts: number;
  /** Wait before the first retry; doubles each time, up to maxRetryDelayMs. */
  retryDelayMs: number;
  /** The longest wait between two attempts (a platform's backoff has a ceiling). */
  maxRetryDelayMs: number;
  hookIdIn: HookIdAnswer;
  seed: number;
  /** Most callback connections open at once per callback host, kept alive and reused; 0: one new connection per delivery, all at once. */
  sockets: number;
}

export const DEFAULT_ITEM_DELIVERY: ItemDeliverySettings = {
  delayMs: 50,
  jitterMs: 0,
  duplicateRate: 0,
  lossRate: 0,
  maxAttempts: 5,
  retryDelayMs: 500,
  maxRetryDelayMs: 600_000,
  hookIdIn: 'both',
  seed: 1,
  sockets: DEFAULT_DELIVERY_SOCKETS,
};

export interface ItemDeliveryStats {
  /** Events that matched a subscription. */
  events: number;
  /** Events dropped by the loss fault. */
  lost: number;
  /** Extra copies sent by the duplicate fault. */
  duplicated: number;
  /** Attempts made (first attempts and retries). */
  attempts: number;
  /** Attempts refused (non-2xx or no answer). */
  refused: number;
  /** Deliveries that ended with a 2xx. */
  delivered: number;
  /** Deliveries given up after maxAttempts. */
  abandoned: number;
  /** Deliveries waiting or in flight. */
  pending: number;
  /** Callback connections open now. */
  openSockets: number;
  /** The most callback connections open at one moment (since the last reset). */
  peakSockets: number;
}

const DELIVERY_TIMEOUT_MS = 5000;

export class ItemHookError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ItemHookError';
  }
}

export class ItemHookHub {
  private hooks: ItemHook[] = [];
  private nextId = 1;
  private settingsNow: ItemDeliverySettings = { ...DEFAULT_ITEM_DELIVERY };
  private prng = new Prng(DEFAULT_ITEM_DELIVERY.seed);
  private stat: ItemDeliveryStats = emptyStats();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<ClientRequest>();
  private closed = false;
  private sockets = new DeliverySockets(DEFAULT_DELIVERY_SOCKETS);
  /** Earlier socket pools (before a change of `sockets`): their deliveries finish on them; closed with the hub. */
  private readonly retired: DeliverySockets[] = [];

  constructor(private readonly idsAsNumbers: boolean) {}

  get settings(): ItemDeliverySettings {
    return { ...this.settingsNow };
  }

  get stats(): ItemDeliveryStats {
    const pools = [this.sockets, ...this.retired];
    return {
      ...this.stat,
      openSockets: pools.reduce((n, p) => n + p.openNow, 0),
      peakSockets: Math.max(this.stat.peakSockets, ...pools.map((p) => p.peak)),
    };
  }

  list(): ItemHook[] {
    return this.hooks.map((h) => ({ ...h }));
  }

  /** Validates a delivery settings patch (null restores a default) and applies it. */
  updateSettings(input: unknown): ItemDeliverySettings {
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw new ItemHookError('item hook delivery settings: expected an object');
    const next = { ...this.settingsNow };
    for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
      if (!(key in DEFAULT_ITEM_DELIVERY))
        throw new ItemHookError(
          `item hook delivery settings: unknown key "${key}" (known: ${Object.keys(DEFAULT_ITEM_DELIVERY).join(', ')})`,
        );
      const k = key as keyof ItemDeliverySettings;
      if (value === null) {
        (next as Record<string, unknown>)[k] = DEFAULT_ITEM_DELIVERY[k];
        continue;
      }
      if (k === 'hookIdIn') {
        if (value !== 'data' && value !== 'location' && value !== 'both')
          throw new ItemHookError('hookIdIn: must be "data", "location" or "both"');
        next.hookIdIn = value;
      } else if (k === 'duplicateRate' || k === 'lossRate') {
        if (typeof value !== 'number' || !(value >= 0 && value <= 1))
          throw new ItemHookError(`${k}: must be a number from 0 to 1 (got ${JSON.stringify(value)})`);
        next[k] = value;
      } else {
        const max = k === 'maxAttempts' ? 20 : k === 'seed' ? Number.MAX_SAFE_INTEGER : k === 'sockets' ? 100_000 : 600_000;
        if (typeof value !== 'number' || !Number.isInteger(value) || value < (k === 'maxAttempts' ? 1 : 0) || value > max) {
          throw new ItemHookError(`${k}: must be an integer from ${k === 'maxAttempts' ? 1 : 0} to ${max} (got ${JSON.stringify(value)})`);
        }
        next[k] = value;
      }
    }
    if (next.seed !== this.settingsNow.seed) this.prng = new Prng(next.seed);
    if (next.sockets !== this.settingsNow.sockets) {
      this.stat.peakSockets = this.stats.peakSockets;
      this.retired.push(this.sockets);
      this.sockets = new DeliverySockets(next.sockets);
    }
    this.settingsNow = next;
    return this.settings;
  }

  /** `POST .../hooks/{eventType}?channel=C` with `{callbackUrl, columnType?}`. Throws ApiError 40000. */
  subscribe(list: ListData, eventTypeText: string, channel: string | null, input: unknown, created: string): ItemHook {
    const eventType = Number(eventTypeText);
    if (!/^[1-4]$/.test(eventTypeText))
      throw badRequest(
        `eventType must be 1 (created), 2 (modified), 3 (created or modified) or 4 (deleted) (got ${JSON.stringify(eventTypeText)})`,
      );
    if (channel === null || channel === '') throw badRequest('the channel query parameter is required (?channel=...)');
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw badRequest('The request body must be a JSON object {callbackUrl, columnType?}');
    const b = input as Record<string, unknown>;
    const url = b['callbackUrl'];
    if (typeof url !== 'string' || !isHttpUrl(url)) throw badRequest('callbackUrl must be an http(s) URL');
    const columnType = b['columnType'];
    if (columnType !== undefined && columnType !== null && (typeof columnType !== 'number' || !Number.isInteger(columnType)))
      throw badRequest('columnType must be an integer');
    const hook: ItemHook = {
      Id: String(9_100_000_000_000_000_000n + BigInt(this.nextId++)),
      AppID: list.appID,
      ListID: list.listID,
      EventType: eventType,
      Channel: channel,
      CallbackUrl: url,
      ColumnType: typeof columnType === 'number' ? columnType : null,
      Created: created,
    };
    this.hooks.push(hook);
    return hook;
  }

  /** `DELETE .../hooks/{hookId}`; an unknown hook is 40400. */
  unsubscribe(list: ListData, hookId: string): void {
    const i = this.hooks.findIndex((h) => h.Id === hookId && h.AppID === list.appID && h.ListID === list.listID);
    if (i === -1) throw new ApiError(STATUS.notFound, `Hook ${hookId} not found on list ${list.appID}/${list.listID}`);
    this.hooks.splice(i, 1);
  }

  /** Tells subscribers of the list about a change of the item in `slot` (for a delete: call before removing it). */
  changed(list: ListData, slot: number, change: ItemChange): void {
    if (this.closed) return;
    const targets = this.hooks.filter((h) => h.AppID === list.appID && h.ListID === list.listID && matches(h.EventType, change));
    if (targets.length === 0) return;
    const body = itemsJson(buildProjection(list, undefined, this.idsAsNumbers), [slot]).slice(1, -1);
    for (const hook of targets) this.schedule(hook, body);
  }

  reset(): void {
    this.cancelAll();
    this.hooks = [];
    this.nextId = 1;
    this.stat = emptyStats();
    for (const p of [this.sockets, ...this.retired]) p.resetPeak();
  }

  close(): void {
    this.closed = true;
    this.cancelAll();
    for (const p of [this.sockets, ...this.retired]) p.destroy();
  }

  private cancelAll(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const r of this.inFlight) r.destroy(new Error('emulator closed'));
    this.inFlight.clear();
    this.stat.pending = 0;
  }

  private schedule(hook: ItemHook, body: string): void {
    const s = this.settingsNow;
    this.stat.events++;
    if (s.lossRate > 0 && this.prng.chance(s.lossRate)) {
      this.stat.lost++;
      return;
    }
    const copies = s.duplicateRate > 0 && this.prng.chance(s.duplicateRate) ? 2 : 1;
    if (copies === 2) this.stat.duplicated++;
    for (let i = 0; i < copies; i++) {
      this.stat.pending++;
      this.later(s.delayMs + (s.jitterMs > 0 ? this.prng.int(s.jitterMs + 1) : 0), () => this.attempt(hook, body, 1));
    }
  }

  private later(ms: number, fn: () => void): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private attempt(hook: ItemHook, body: string, attempt: number): void {
    this.stat.attempts++;
    void this.post(hook, body).then((ok) => {
      if (ok) {
        this.stat.delivered++;
        this.stat.pending--;
        return;
      }
      this.stat.refused++;
      if (attempt >= this.settingsNow.maxAttempts || this.closed) {
        this.stat.abandoned++;
        this.stat.pending--;
        return;
      }
      const { retryDelayMs, maxRetryDelayMs } = this.settingsNow;
      this.later(Math.min(maxRetryDelayMs, retryDelayMs * 2 ** (attempt - 1)), () => this.attempt(hook, body, attempt + 1));
    });
  }

  private post(hook: ItemHook, body: string): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const target = new URL(hook.CallbackUrl);
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const pool = this.sockets;
      const { agent, connection } = pool.requestOptions(target.protocol);
      let settled = false;
      const done = (ok: boolean): void => {
        if (settled) return;
        settled = true;
        this.inFlight.delete(req);
        resolve(ok);
      };
      const req = send(target, {
        method: 'POST',
        agent,
        headers: {
          Channel: hook.Channel,
          Type: String(hook.EventType),
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
          Connection: connection,
          Date: new Date(nowEpochMs()).toUTCString(),
        },
        // Counted from when the delivery has a socket: waiting for one of the bounded sockets is not a slow answer.
        timeout: DELIVERY_TIMEOUT_MS,
      });
      pool.track(req);
      this.inFlight.add(req);
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => done((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300));
        res.on('error', () => done(false));
      });
      req.on('timeout', () => req.destroy(new Error('no answer')));
      req.on('error', () => done(false));
      req.end(body);
    });
  }
}

function matches(eventType: number, change: ItemChange): boolean {
  if (change === 'deleted') return eventType === ITEM_EVENT_TYPES.deleted;
  if (eventType === ITEM_EVENT_TYPES.createdOrModified) return true;
  return change === 'created' ? eventType === ITEM_EVENT_TYPES.created : eventType === ITEM_EVENT_TYPES.modified;
}

function emptyStats(): ItemDeliveryStats {
  return {
    events: 0,
    lost: 0,
    duplicated: 0,
    attempts: 0,
    refused: 0,
    delivered: 0,
    abandoned: 0,
    pending: 0,
    openSockets: 0,
    peakSockets: 0,
  };
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
