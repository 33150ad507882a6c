import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { badRequest } from './api-error.js';
import { DEFAULT_DELIVERY_SOCKETS, DeliverySockets } from './delivery-sockets.js';
import { snowflakeId } from './ids.js';
import { nowEpochMs } from './request-log.js';

/**
 * Webhook subscriptions (`POST /v1/hooks`) and callback deliveries: a POST to
 * the subscriber's callbackUrl with `Channel` and `Type` headers and a JSON
 * workflow-task event. Every delivery is recorded and can be replayed
 * byte for byte (to test a receiver's dedup). Callbacks go out on at most
 * DEFAULT_DELIVERY_SOCKETS kept-alive connections per callback host.
 */

export interface HookSubscription {
  Id: string;
  Resource: string;
  Channel: string;
  Type: number;
  Settings: { callbackUrl: string };
  Created: string;
}

/** The callback body for `workflow/tasks`. */
export interface HookEventBody {
  TaskID: string;
  WorkflowID: string;
  ListDataID?: string;
  Event: string;
  Assignee: string;
  Created: string;
  [key: string]: unknown;
}

export interface HookDelivery {
  index: number;
  subscriptionId: string;
  url: string;
  headers: Record<string, string>;
  /** The exact body sent. */
  body: string;
  statusCode: number | null;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
  redeliveryOf?: number;
}

const DELIVERY_TIMEOUT_MS = 5000;
/** The workflow the simulated tasks belong to. */
export const WORKFLOW_ID = '1500000000000000001';
const MAX_DELIVERIES = 10_000;

export class WebhookHub {
  private subs: HookSubscription[] = [];
  private log: HookDelivery[] = [];
  private nextId = 1;
  private deliveryCount = 0;
  private taskCount = 0;
  private readonly inFlight = new Set<ClientRequest>();
  private closed = false;
  private readonly sockets = new DeliverySockets(DEFAULT_DELIVERY_SOCKETS);

  /** Validates and stores a subscription request (throws ApiError 40000). */
  subscribe(input: unknown, created: string): HookSubscription {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw badRequest('The request body must be a JSON object');
    const b = input as Record<string, unknown>;
    if (typeof b['Resource'] !== 'string') throw badRequest('Resource must be a string (e.g. "workflow/tasks")');
    if (typeof b['Channel'] !== 'string' || b['Channel'] === '') throw badRequest('Channel must be a non-empty string');
    if (typeof b['Type'] !== 'number' || !Number.isInteger(b['Type'])) throw badRequest('Type must be an integer event type code');
    const settings = b['Settings'];
    const url = typeof settings === 'object' && settings !== null ? (settings as Record<string, unknown>)['callbackUrl'] : undefined;
    if (typeof url !== 'string' || !isHttpUrl(url)) throw badRequest('Settings.callbackUrl must be an http(s) URL');
    const sub: HookSubscription = {
      Id: `hook-${this.nextId++}`,
      Resource: b['Resource'],
      Channel: b['Channel'],
      Type: b['Type'],
      Settings: { callbackUrl: url },
      Created: created,
    };
    this.subs.push(sub);
    return sub;
  }

  subscriptions(): HookSubscription[] {
    return this.subs.map((s) => ({ ...s, Settings: { ...s.Settings } }));
  }

  deliveries(): HookDelivery[] {
    return this.log.map((d) => ({ ...d, headers: { ...d.headers } }));
  }

  /** Sends an event to every subscription (or one, by Id; optionally only those of a resource). */
  async fire(event: HookEventBody, opts: { subscriptionId?: string; resource?: string } = {}): Promise<HookDelivery[]> {
    let targets = this.subs;
    if (opts.subscriptionId !== undefined) {
      targets = this.subs.filter((s) => s.Id === opts.subscriptionId);
      if (targets.length === 0) throw new Error(`no subscription with Id "${opts.subscriptionId}"`);
    } else if (opts.resource !== undefined) {
      targets = this.subs.filter((s) => s.Resource === opts.resource);
    }
    const body = JSON.stringify(event);
    return Promise.all(
      targets.map((s) =>
        this.deliver(s.Id, s.Settings.callbackUrl, { Channel: s.Channel, Type: String(s.Type), 'Content-Type': 'application/json' }, body),
      ),
    );
  }

  /** Replays a delivery exactly: same URL, headers and body. */
  async redeliver(index: number): Promise<HookDelivery> {
    const d = this.log.find((x) => x.index === index);
    if (!d) throw new Error(`no delivery with index ${index}`);
    return this.deliver(d.subscriptionId, d.url, d.headers, d.body, d.index);
  }

  private deliver(
    subscriptionId: string,
    url: string,
    headers: Record<string, string>,
    body: string,
    redeliveryOf?: number,
  ): Promise<HookDelivery> {
    const d: HookDelivery = {
      index: this.deliveryCount++,
      subscriptionId,
      url,
      headers: { ...headers },
      body,
      statusCode: null,
      error: null,
      startedAt: nowEpochMs(),
      finishedAt: null,
    };
    if (redeliveryOf !== undefined) d.redeliveryOf = redeliveryOf;
    this.log.push(d);
    if (this.log.length > MAX_DELIVERIES) this.log.splice(0, this.log.length - MAX_DELIVERIES);
    if (this.closed) {
      d.error = 'emulator closed';
      d.finishedAt = nowEpochMs();
      return Promise.resolve({ ...d });
    }
    return new Promise((resolve) => {
      const done = (statusCode: number | null, error: string | null): void => {
        if (d.finishedAt !== null) return;
        d.statusCode = statusCode;
        d.error = error;
        d.finishedAt = nowEpochMs();
        this.inFlight.delete(req);
        resolve({ ...d, headers: { ...d.headers } });
      };
      const target = new URL(url);
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const { agent, connection } = this.sockets.requestOptions(target.protocol);
      const req = send(target, {
        method: 'POST',
        agent,
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)), Connection: connection },
        timeout: DELIVERY_TIMEOUT_MS,
      });
      this.sockets.track(req);
      this.inFlight.add(req);
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? null, null));
        res.on('error', (e) => done(res.statusCode ?? null, e.message));
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS} ms`)));
      req.on('error', (e) => done(null, e.message));
      req.end(body);
    });
  }

  /** A workflow-task event body: defaults for every key, `overrides` on top. */
  taskEvent(
    overrides: Partial<HookEventBody>,
    defaults: { nowMs: number; created: string; assignee: string; listDataId?: string },
  ): HookEventBody {
    const taskId = snowflakeId(defaults.nowMs, this.taskCount++).toString();
    const event: HookEventBody = {
      TaskID: taskId,
      WorkflowID: WORKFLOW_ID,
      Event: 'TaskCreated',
      Assignee: defaults.assignee,
      Created: defaults.created,
    };
    if (defaults.listDataId !== undefined) event.ListDataID = defaults.listDataId;
    return { ...event, ...overrides };
  }

  reset(): void {
    this.subs = [];
    this.log = [];
    this.nextId = 1;
    this.deliveryCount = 0;
  }

  close(): void {
    this.closed = true;
    for (const r of this.inFlight) r.destroy(new Error('emulator closed'));
    this.inFlight.clear();
    this.sockets.destroy();
  }
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
