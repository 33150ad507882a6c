/**
 * PlatformClient: the one way listsync talks to the platform.
 *
 * Every attempt of every request goes through one p-queue (concurrency =
 * `maxInFlight`) and, inside its task, waits for a send slot from the rate
 * limiter (shared through Postgres when a SharedBudget is given). The retry
 * loop lives here, around got (whose own retry is off), so that retries are
 * paced and counted like first attempts; which failures are tried again, and
 * after how long, is the retry rule's (retry-decision.ts):
 *
 * - reads (GETs and the reads sent as POST: `items/query`, `users/search`)
 *   are retried on every passing failure;
 * - `createItem` is retried only when the attempt surely did not reach the
 *   server (connection refused, DNS failure) or was refused with 429;
 * - `updateItem` (PATCH) is retried: it is version-checked, so a retry of an
 *   attempt that was in fact applied fails with a RowVersion mismatch. Such a
 *   failure carries `maybeApplied: true` (and `retries > 0`), so the caller
 *   can re-read the item instead of reporting a conflict. A PATCH that got
 *   no answer at all (a timeout, a cut connection) is not resent here: the
 *   push reads the item by ID first and sends it at most once more;
 * - `deleteItem` (DELETE) is retried the same way: deleting an absent item
 *   answers "not found", so a retry of an attempt that was in fact applied
 *   throws NotFoundError with `maybeApplied: true`;
 * - validation, auth, not-found and conflict answers are never retried.
 *
 * Success is HTTP 2xx with envelope Status 0 (answer-decoding.ts); anything
 * else becomes a typed PlatformError. The apiKey travels only in the `apiKey`
 * header and never appears in errors, log lines or URLs.
 */
import { setMaxListeners } from 'node:events';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import type { PlatformConfig } from '../config.js';
import {
  type AnsweredAttempt,
  type Attempt,
  type Envelope,
  type FailedAttempt,
  applicationsInAnswer,
  asArray,
  asObject,
  countOf,
  decodeAnswer,
  directoryRows,
  hookIdInAnswer,
  idInAnswer,
  itemInAnswer,
  listsInAnswer,
  unexpected,
} from './answer-decoding.js';
import { parseRetryAfter } from './backoff.js';
import { type Clock, abortReason, systemClock } from './clock.js';
import {
  type PlatformError,
  TransportError,
  ValidationError,
  type PlatformErrorDetails,
  failureMessage,
  sanitizeCause,
  scrub,
} from './platform-errors.js';
import { type PlatformHttp, createPlatformHttp } from './http.js';
import { HEAP_BUDGET_BYTES, HeapBudget } from '../heap-budget.js';
import { MAX_PAGE_SIZE, type PageResult, type PaginateOptions, assertPageSize, paginate } from './paging.js';
import type { LearnedLimits } from './learned-limits.js';
import { RateLimiter, type SendSlot } from './rate-limiter.js';
import type { SharedBudget } from './shared-budget.js';
import { normalizeFields } from './field-meta.js';
import type { FieldMeta, Item, ItemQuery, ListDetails, Page, PlatformApplication, PlatformListRef, PlatformUser } from './types.js';
import { coerceError } from '../errors.js';
import { traceRequest } from './request-trace.js';
import { currentTally, type ClientStats } from './request-tally.js';
import { type Repeat, type RetryDecision, type RetryPolicy, decideRetry } from './retry-decision.js';

export type { Envelope } from './answer-decoding.js';
export type { Repeat } from './retry-decision.js';

export type RequestOutcome = 'ok' | 'error' | 'retry' | 'rate_limited';

/** One attempt, as reported to `onRequest` (metrics). */
export interface RequestEvent {
  method: string;
  /** Route template, e.g. `items/query`, `items/{itemID}`, `users/search`. */
  endpoint: string;
  outcome: RequestOutcome;
  httpStatus?: number;
  /** Envelope Status, when there was an envelope. */
  status?: number;
  durationMs: number;
  /** 0 for the first attempt. */
  attempt: number;
  /** The account whose client sent it (set by src/account-clients.ts). */
  account?: string;
}

export interface PlatformClientOptions {
  /** The platform section of the config; keys with defaults may be left out here. */
  config: PlatformClientConfig;
  logger?: Logger;
  /** Request budget shared through Postgres with every process using the same account. */
  budget?: SharedBudget;
  onRequest?: (e: RequestEvent) => void;
  /** Extra spacing between requests, as a fraction of 1000 / requestsPerSecond. Default: `platform.rateMargin` (0.03). */
  rateMargin?: number;
  /** Tests: time source for the rate limiter and backoff sleeps. */
  clock?: Clock;
  /** Tests: random source for jitter. */
  random?: () => number;
  /** JS heap in use a paged read leaves between pages, at most (heap-budget.ts); 0 turns it off. Default HEAP_BUDGET_BYTES. */
  heapBudgetBytes?: number;
}

export type { ClientStats } from './request-tally.js';

/** `omitsEmptyValues` (how items are stored) and `maxConcurrentJobs` (how jobs run) are not about requests: the client never reads them. */
export type PlatformClientConfig = Omit<
  PlatformConfig,
  'maxBytesAhead' | 'rateMargin' | 'burst' | 'omitsEmptyValues' | 'maxConcurrentJobs'
> &
  Partial<Pick<PlatformConfig, 'maxBytesAhead' | 'rateMargin' | 'burst' | 'omitsEmptyValues'>>;

export interface PageOptions {
  /** 1-based page to start at (resume). Default 1. */
  startPage?: number;
  /** 1..1000. Default: the query's PageSize, else 1000. */
  pageSize?: number;
  signal?: AbortSignal;
  /** Completeness checks and stopping rules (see PaginateOptions). */
  verify?: PaginateOptions<Item>['verify'];
  isLast?: PaginateOptions<Item>['isLast'];
  maxPages?: number;
  confirmEnd?: PaginateOptions<Item>['confirmEnd'];
  /** TotalCount just answered by a probe with the same filters: pages are fetched ahead from the start. */
  expectedTotal?: number;
  /** Pages fetched ahead; default maxInFlight. */
  window?: number;
  /** The start page's answer, already asked for (see `queryPageResult`). */
  firstPage?: Promise<PageResult<Item>>;
  onLastPageAsked?: PaginateOptions<Item>['onLastPageAsked'];
}

export interface UserPageOptions {
  searchKey?: string;
  /** 1..1000. Default 1000. */
  pageSize?: number;
  startPage?: number;
  signal?: AbortSignal;
}

export interface HookSubscription {
  resource: string;
  channel: string;
  type: number;
  callbackUrl: string;
}

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  endpoint: string;
  /** Path relative to the base URL, segments encoded, no leading slash. */
  path: string;
  body?: unknown;
  repeat: Repeat;
  signal?: AbortSignal;
}

export class PlatformClient {
  readonly config: PlatformClientConfig;
  private readonly http: PlatformHttp;
  private readonly queue: PQueue;
  private readonly limiter: RateLimiter;
  private readonly logger: Logger | undefined;
  private readonly onRequest: ((e: RequestEvent) => void) | undefined;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly secrets: string[];
  private readonly closing = new AbortController();
  private readonly counters: ClientStats = { requests: 0, retries: 0, rateLimited: 0, errors: 0 };
  private closed = false;
  /** The Location header of a successful answer, by its envelope (read by subscribeItemHook). */
  private readonly locations = new WeakMap<Envelope, string>();
  /** Body length (UTF-16 code units) of each answer, for the pager's byte bound. */
  private readonly sizes = new WeakMap<Envelope, number>();
  /** One per client: every paged read shares the process's heap budget. */
  private readonly heapBudget: HeapBudget;

  constructor(options: PlatformClientOptions) {
    this.heapBudget = new HeapBudget(options.heapBudgetBytes ?? HEAP_BUDGET_BYTES);
    const config = options.config;
    this.config = config;
    this.logger = options.logger;
    this.onRequest = options.onRequest;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    // Every request in flight listens on this signal; many at once are expected, not a leak.
    setMaxListeners(0, this.closing.signal);
    this.secrets = [config.apiKey].filter((s) => s.length >= 4);
    this.http = createPlatformHttp({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      timeoutMs: config.timeoutMs,
      maxFreeSockets: config.maxInFlight,
    });
    this.queue = new PQueue({ concurrency: config.maxInFlight });
    this.limiter = new RateLimiter({
      requestsPerSecond: config.requestsPerSecond,
      margin: options.rateMargin ?? config.rateMargin,
      burst: config.burst,
      clock: this.clock,
      source: options.budget,
      logger: this.logger,
    });
  }

  /** Cumulative counters; diff before and after a run. Inside a run's tally (request-tally.ts): that run's own. */
  stats(): ClientStats {
    return { ...(currentTally() ?? this.counters) };
  }

  /** Counts an attempt's outcome in the totals and in the tally of the run it belongs to. */
  private count(key: keyof ClientStats): void {
    this.counters[key]++;
    const tally = currentTally();
    if (tally) tally[key]++;
  }

  /** The rate limiter's current fraction of `requestsPerSecond` (below 1 after throttling). */
  rateFactor(): number {
    return this.limiter.rateFactor();
  }

  /** What the rate limiter has learned about the account from 429 answers, as it applies now. */
  learnedLimits(): LearnedLimits {
    return this.limiter.learnedNow();
  }

  /** Resolves when no request is queued or in flight. */
  async idle(): Promise<void> {
    await this.queue.onIdle();
  }

  /** Aborts what is still queued or in flight, stops the limiter and closes the sockets. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.queue.clear();
    this.closing.abort(new Error('PlatformClient closed'));
    this.limiter.close();
    await this.queue.onIdle().catch(() => undefined);
    this.http.destroy();
  }

  // ---- operations ---------------------------------------------------------

  /** One page of items. PageSize above 1000 throws ValidationError before any request. */
  async queryItems(appID: string, listID: string, query: ItemQuery, signal?: AbortSignal): Promise<{ items: Item[]; totalCount: number }> {
    const r = await this.queryPage(appID, listID, query, signal);
    return { items: r.items, totalCount: r.totalCount ?? r.items.length };
  }

  /** One page as `pages()` reads it (TotalCount possibly absent, the answer's size): to ask for a first page early. */
  queryPageResult(appID: string, listID: string, query: ItemQuery, signal?: AbortSignal): Promise<PageResult<Item>> {
    return this.queryPage(appID, listID, query, signal);
  }

  async getList(appID: string, listID: string, signal?: AbortSignal): Promise<ListDetails> {
    const env = await this.request({
      method: 'GET',
      endpoint: 'lists/{appID}/{listID}',
      path: listPath(appID, listID),
      repeat: 'read',
      signal,
    });
    return asObject(env.Data, 'GET', `/${listPath(appID, listID)}`) as ListDetails;
  }

  async getFields(appID: string, listID: string, signal?: AbortSignal): Promise<FieldMeta[]> {
    const path = `${listPath(appID, listID)}/fields`;
    const env = await this.request({ method: 'GET', endpoint: 'lists/{appID}/{listID}/fields', path, repeat: 'read', signal });
    const fields = normalizeFields(env.Data);
    if (fields === undefined) throw unexpected('GET', `/${path}`, 'Data is not a field list');
    if (fields.length === 0)
      throw unexpected('GET', `/${path}`, 'the list has no fields (an empty or nameless field list); a list always has its system fields');
    return fields;
  }

  /** Creates an item; returns its ID (a string). Not retried once the request may have reached the server. */
  async createItem(appID: string, listID: string, data: Record<string, string>, signal?: AbortSignal): Promise<string> {
    const path = `${listPath(appID, listID)}/items`;
    const env = await this.request({
      method: 'POST',
      endpoint: 'items',
      path,
      body: { Data: stringValues(data, 'POST', `/${path}`) },
      repeat: 'create',
      signal,
    });
    return idInAnswer(env.Data, 'POST', `/${path}`);
  }

  /**
   * Updates an item if its RowVersion still matches (0 overwrites). Retried on
   * transport errors and 5xx; a ConflictError with `maybeApplied` may be the
   * echo of our own earlier attempt.
   */
  async updateItem(
    appID: string,
    listID: string,
    itemID: string,
    rowVersion: number,
    data: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<void> {
    const path = itemPath(appID, listID, itemID);
    if (!Number.isInteger(rowVersion) || rowVersion < 0) {
      throw new ValidationError(
        `PATCH /${path} refused before sending: RowVersion must be a non-negative integer (got ${String(rowVersion)})`,
        { method: 'PATCH', path: `/${path}` },
      );
    }
    await this.request({
      method: 'PATCH',
      endpoint: 'items/{itemID}',
      path,
      body: { RowVersion: rowVersion, Data: stringValues(data, 'PATCH', `/${path}`) },
      repeat: 'update',
      signal,
    });
  }

  /**
   * Discovery, optional on the platform: the account's applications. Takes
   * Data as an array or as an object holding one (Items, List, Data); the ID
   * from AppID, ID, Id or ApplicationID, the title from Title or Name.
   */
  async listApplications(signal?: AbortSignal): Promise<PlatformApplication[]> {
    const env = await this.request({ method: 'GET', endpoint: 'applications', path: 'applications', repeat: 'read', signal });
    return applicationsInAnswer(env.Data, 'GET', '/applications');
  }

  /** Discovery, optional on the platform: an application's lists (shapes as for `listApplications`). */
  async listApplicationLists(appId: string, signal?: AbortSignal): Promise<PlatformListRef[]> {
    const path = `applications/${encodeURIComponent(appId)}/lists`;
    const env = await this.request({ method: 'GET', endpoint: 'applications/{id}/lists', path, repeat: 'read', signal });
    return listsInAnswer(env.Data, appId, 'GET', `/${path}`);
  }

  /**
   * One item by its ID, as it is now. An unknown item throws a PlatformError
   * (NotFoundError where the answer says so in a known way; any other non-zero
   * Status is not retried). Whether the item is gone is decided by
   * `readItemOrGone` / `lookUpItems` (src/platform/item-lookup.ts), never by
   * the error's class alone.
   */
  async getItem(appID: string, listID: string, itemID: string, signal?: AbortSignal): Promise<Item> {
    const path = itemPath(appID, listID, itemID);
    const env = await this.request({ method: 'GET', endpoint: 'items/{itemID}', path, repeat: 'lookup', signal });
    return itemInAnswer(env.Data, 'GET', `/${path}`) as Item;
  }

  /**
   * Deletes an item. Retried on transport errors and 5xx (deleting twice is
   * harmless). An absent item throws NotFoundError; when `maybeApplied` is
   * set on it, an earlier attempt of this call may have deleted the item
   * although its answer was lost.
   */
  async deleteItem(appID: string, listID: string, itemID: string, signal?: AbortSignal): Promise<void> {
    const path = itemPath(appID, listID, itemID);
    await this.request({ method: 'DELETE', endpoint: 'items/{itemID}', path, repeat: 'delete', signal });
  }

  async searchUsers(
    params: { searchKey?: string; pageIndex: number; pageSize: number },
    signal?: AbortSignal,
  ): Promise<{ items: PlatformUser[]; totalCount: number }> {
    const r = await this.userPage(params.searchKey, params.pageIndex, params.pageSize, signal);
    return { items: r.items, totalCount: r.totalCount ?? r.items.length };
  }

  // ---- organization directory (answer shapes beyond a few keys are not documented: read leniently)

  /** Every department (`GET /departments?parentId=0`). */
  async getDepartments(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    const env = await this.request({ method: 'GET', endpoint: 'departments', path: 'departments?parentId=0', repeat: 'read', signal });
    return directoryRows(env.Data, 'GET', '/departments');
  }

  /** One page of groups (`GET /groups?keywords=&pageIndex=&pageSize=`). */
  async getGroups(
    pageIndex: number,
    pageSize: number,
    signal?: AbortSignal,
  ): Promise<{ items: Record<string, unknown>[]; totalCount: number | undefined }> {
    assertPageSize(pageSize, { method: 'GET', path: '/groups' });
    const env = await this.request({
      method: 'GET',
      endpoint: 'groups',
      path: `groups?keywords=&pageIndex=${pageIndex}&pageSize=${pageSize}`,
      repeat: 'read',
      signal,
    });
    return { items: directoryRows(env.Data, 'GET', '/groups'), totalCount: countOf(env.TotalCount) };
  }

  /** The members of a group (`GET /groups/{id}/users`). */
  async getGroupUsers(groupID: string, signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    const path = `groups/${encodeURIComponent(groupID)}/users`;
    const env = await this.request({ method: 'GET', endpoint: 'groups/{id}/users', path, repeat: 'read', signal });
    return directoryRows(env.Data, 'GET', `/${path}`);
  }

  /** Every position (`GET /positions`). */
  async getPositions(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    const env = await this.request({ method: 'GET', endpoint: 'positions', path: 'positions', repeat: 'read', signal });
    return directoryRows(env.Data, 'GET', '/positions');
  }

  async subscribeHook(hook: HookSubscription, signal?: AbortSignal): Promise<{ id: string }> {
    const env = await this.request({
      method: 'POST',
      endpoint: 'hooks',
      path: 'hooks',
      body: { Resource: hook.resource, Channel: hook.channel, Type: hook.type, Settings: { callbackUrl: hook.callbackUrl } },
      repeat: 'create',
      signal,
    });
    return { id: idInAnswer(env.Data, 'POST', '/hooks') };
  }

  /**
   * Subscribes a list's item events (event type 1 created, 2 modified, 3
   * created or modified, 4 deleted). The platform answers 201; the new hook's
   * ID is read from Data (a string, a number or an object with an ID) or else
   * from the last segment of a Location header.
   */
  async subscribeItemHook(
    appID: string,
    listID: string,
    eventType: number,
    channel: string,
    callbackUrl: string,
    signal?: AbortSignal,
  ): Promise<{ id: string }> {
    const path = `${listPath(appID, listID)}/hooks/${eventType}?channel=${encodeURIComponent(channel)}`;
    const env = await this.request({
      method: 'POST',
      endpoint: 'lists/{appID}/{listID}/hooks/{eventType}',
      path,
      body: { callbackUrl, columnType: 0 },
      repeat: 'create',
      signal,
    });
    return { id: hookIdInAnswer(env.Data, this.locations.get(env), 'POST', `/${path.split('?')[0]}`) };
  }

  /** Removes a list item event subscription. An unknown hook throws NotFoundError. */
  async unsubscribeItemHook(appID: string, listID: string, hookId: string, signal?: AbortSignal): Promise<void> {
    const path = `${listPath(appID, listID)}/hooks/${encodeURIComponent(hookId)}`;
    await this.request({ method: 'DELETE', endpoint: 'lists/{appID}/{listID}/hooks/{hookId}', path, repeat: 'delete', signal });
  }

  /** Pages of a list query, in order, with up to `maxInFlight` pages fetched ahead. */
  pages(appID: string, listID: string, query: ItemQuery = {}, options: PageOptions = {}): AsyncGenerator<Page<Item>, void, undefined> {
    const path = `/${listPath(appID, listID)}/items/query`;
    const pageSize = options.pageSize ?? query.PageSize ?? MAX_PAGE_SIZE;
    assertPageSize(pageSize, { method: 'POST', path });
    return paginate<Item>(
      (pageIndex, size, signal) => this.queryPage(appID, listID, { ...query, PageIndex: pageIndex, PageSize: size }, signal),
      {
        startPage: options.startPage ?? query.PageIndex,
        pageSize,
        window: options.window ?? this.config.maxInFlight,
        signal: options.signal,
        onEmptyPageRetry: () => this.count('retries'),
        describe: { method: 'POST', path },
        verify: options.verify,
        isLast: options.isLast,
        maxPages: options.maxPages,
        confirmEnd: options.confirmEnd,
        expectedTotal: options.expectedTotal,
        firstPage: options.firstPage,
        onLastPageAsked: options.onLastPageAsked,
        maxBytesAhead: this.config.maxBytesAhead,
        heapBudget: this.heapBudget,
      },
    );
  }

  /** Pages of users/search, in order. */
  userPages(options: UserPageOptions = {}): AsyncGenerator<Page<PlatformUser>, void, undefined> {
    const pageSize = options.pageSize ?? MAX_PAGE_SIZE;
    assertPageSize(pageSize, { method: 'POST', path: '/users/search' });
    return paginate<PlatformUser>((pageIndex, size, signal) => this.userPage(options.searchKey, pageIndex, size, signal), {
      startPage: options.startPage,
      pageSize,
      window: this.config.maxInFlight,
      signal: options.signal,
      onEmptyPageRetry: () => this.count('retries'),
      describe: { method: 'POST', path: '/users/search' },
    });
  }

  /**
   * Any other endpoint: sends one request through the same queue, limiter and
   * retry loop and returns the envelope. `repeat` says how it may be retried.
   */
  async call(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    options: { body?: unknown; repeat: Repeat; endpoint?: string; signal?: AbortSignal },
  ): Promise<Envelope> {
    const clean = path.replace(/^\/+/, '').split('?')[0]!;
    return this.request({
      method,
      path: clean,
      endpoint: options.endpoint ?? clean,
      body: options.body,
      repeat: options.repeat,
      signal: options.signal,
    });
  }

  // ---- internals ----------------------------------------------------------

  private async queryPage(appID: string, listID: string, query: ItemQuery, signal?: AbortSignal): Promise<PageResult<Item>> {
    const path = `${listPath(appID, listID)}/items/query`;
    const body: ItemQuery = { ...query, PageIndex: Math.max(1, query.PageIndex ?? 1), PageSize: query.PageSize ?? MAX_PAGE_SIZE };
    assertPageSize(body.PageSize!, { method: 'POST', path: `/${path}` });
    const env = await this.request({ method: 'POST', endpoint: 'items/query', path, body, repeat: 'read', signal });
    return { items: asArray(env.Data, 'POST', `/${path}`) as Item[], totalCount: countOf(env.TotalCount), bytes: this.sizes.get(env) };
  }

  private async userPage(
    searchKey: string | undefined,
    pageIndex: number,
    pageSize: number,
    signal?: AbortSignal,
  ): Promise<PageResult<PlatformUser>> {
    assertPageSize(pageSize, { method: 'POST', path: '/users/search' });
    const body: Record<string, unknown> = { PageIndex: Math.max(1, pageIndex), PageSize: pageSize };
    if (searchKey !== undefined) body.SearchKey = searchKey;
    const env = await this.request({ method: 'POST', endpoint: 'users/search', path: 'users/search', body, repeat: 'read', signal });
    return { items: asArray(env.Data, 'POST', '/users/search') as PlatformUser[], totalCount: countOf(env.TotalCount) };
  }

  private async request(call: Call): Promise<Envelope> {
    if (this.closed) throw new Error('PlatformClient is closed');
    const signal = call.signal ? AbortSignal.any([call.signal, this.closing.signal]) : this.closing.signal;
    let maybeApplied = false;
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) throw abortReason(signal);
      let sentAt: number | undefined;
      const result = await this.queue.add(
        async () => {
          const slot = await this.limiter.acquire(signal);
          sentAt = slot.grantedAt;
          return this.send(call, slot, signal);
        },
        { priority: attempt > 0 ? 1 : 0, signal },
      );
      this.count('requests');
      if (attempt > 0) this.count('retries');
      if (result.ok) return this.answered(call, attempt, result);

      const decision = decideRetry(result, call.repeat, attempt, this.retryPolicy());
      if (decision.rateLimited) this.count('rateLimited');
      if (decision.mayHaveApplied) maybeApplied = true;
      const outcome = decision.rateLimited ? 'rate_limited' : decision.retry ? 'retry' : 'error';
      this.report(call, attempt, outcome, result.httpStatus, result.status, result.durationMs);
      // Everyone waits, not just this request; the limiter learns from it (no bursts, a wider margin).
      const pauseMs = decision.rateLimited ? this.limiter.throttled(decision.retryAfterMs, sentAt) : undefined;
      if (!decision.retry) {
        this.count('errors');
        throw this.failure(call, result, attempt, maybeApplied, decision);
      }
      this.logger?.debug(
        {
          method: call.method,
          endpoint: call.endpoint,
          attempt,
          httpStatus: result.httpStatus,
          status: result.status,
          code: result.code,
          delayMs: decision.delayMs,
          pauseMs,
        },
        'platform request failed; retrying',
      );
      if (decision.delayMs > 0) await this.clock.sleep(decision.delayMs, signal);
    }
  }

  private retryPolicy(): RetryPolicy {
    return { retries: this.config.retries, maxRetryAfterSeconds: this.config.maxRetryAfterSeconds, random: this.random };
  }

  /** A success: counted, reported, and its Location and size kept beside its envelope. */
  private answered(call: Call, attempt: number, result: AnsweredAttempt): Envelope {
    this.limiter.succeeded();
    this.report(call, attempt, 'ok', result.httpStatus, result.envelope.Status, result.durationMs);
    if (result.location !== undefined) this.locations.set(result.envelope, result.location);
    this.sizes.set(result.envelope, result.bytes);
    return result.envelope;
  }

  /** The error a request ends with after its last attempt, secrets scrubbed from its message and cause. */
  private failure(call: Call, result: FailedAttempt, attempt: number, maybeApplied: boolean, decision: RetryDecision): PlatformError {
    const path = `/${call.path}`;
    const details: PlatformErrorDetails & { code?: string } = {
      method: call.method,
      path,
      httpStatus: result.httpStatus,
      status: result.status,
      platformMessage: result.message === undefined ? undefined : scrub(result.message, this.secrets),
      retries: attempt,
      maybeApplied,
      retryAfterMs: decision.retryAfterMs,
      code: result.code,
    };
    const message = scrub(failureMessage(call.method, path, details), this.secrets);
    const cause = sanitizeCause(result.cause, this.secrets);
    const errorClass = decision.errorClass;
    return errorClass === TransportError
      ? new TransportError(message, details, cause ? { cause } : undefined)
      : new errorClass(message, details, cause ? { cause } : undefined);
  }

  private async send(call: Call, slot: SendSlot, signal: AbortSignal): Promise<Attempt> {
    const started = this.clock.now();
    const elapsed = (): number => Math.round((this.clock.now() - started) * 10) / 10;
    let statusCode: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    let location: string | undefined;
    let headersAt: number | undefined;
    try {
      const pending = this.http.got(call.path, {
        method: call.method,
        ...(call.body === undefined ? {} : { json: call.body }),
        signal,
      });
      // The limiter spaces requests by when they really left, not when they were allowed to.
      pending.on('request', (req) => req.once('finish', () => slot.sent()));
      let answeredAt: number | undefined;
      pending.on('response', () => (answeredAt = this.clock.now()));
      const response = await pending;
      headersAt = answeredAt;
      slot.sent(); // no effect once the write was reported; a request whose write went unreported counts from its answer
      statusCode = response.statusCode;
      text = response.body;
      retryAfter = response.headers['retry-after'];
      location = response.headers.location;
    } catch (err) {
      slot.sent(); // it may have left before failing: count it from now, as the server may have
      if (signal.aborted) throw abortReason(signal);
      const code = typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : undefined;
      const text = scrub(coerceError(err).message, this.secrets);
      const message = code && !text.includes(code) ? `${text} (${code})` : text;
      return { ok: false, kind: 'transport', code, message, cause: err, durationMs: elapsed() };
    }
    const durationMs = elapsed();
    const attempt = decodeAnswer({ statusCode, text, retryAfterMs: parseRetryAfter(retryAfter), location, durationMs });
    // The answer's round trip shows how long the server held the request before counting it, against
    // the quickest of the answers like it (the same endpoint, within a factor of four in length: a bigger answer takes longer to build).
    if (attempt.ok) slot.answered(`${call.endpoint} ${Math.floor(Math.log2(text.length + 1) / 2)}`, headersAt);
    return attempt;
  }

  private report(
    call: Call,
    attempt: number,
    outcome: RequestOutcome,
    httpStatus: number | undefined,
    status: number | undefined,
    durationMs: number,
  ): void {
    this.logger?.debug(
      { method: call.method, endpoint: call.endpoint, path: `/${call.path}`, attempt, outcome, httpStatus, status, durationMs },
      'platform request',
    );
    const event: RequestEvent = { method: call.method, endpoint: call.endpoint, outcome, durationMs, attempt };
    if (httpStatus !== undefined) event.httpStatus = httpStatus;
    if (status !== undefined) event.status = status;
    traceRequest(event);
    if (!this.onRequest) return;
    try {
      this.onRequest(event);
    } catch (err) {
      this.logger?.warn({ err }, 'onRequest listener threw');
    }
  }
}

function listPath(appID: string, listID: string): string {
  return `lists/${encodeURIComponent(appID)}/${encodeURIComponent(listID)}`;
}

function itemPath(appID: string, listID: string, itemID: string): string {
  return `${listPath(appID, listID)}/items/${encodeURIComponent(itemID)}`;
}

function stringValues(data: Record<string, string>, method: string, path: string): Record<string, string> {
  for (const [k, v] of Object.entries(data)) {
    if (typeof v !== 'string') {
      throw new ValidationError(
        `${method} ${path} refused before sending: Data.${k} must be a string (the platform takes every value as a string; JSON-encode multi-value fields)`,
        { method, path },
      );
    }
  }
  return data;
}
