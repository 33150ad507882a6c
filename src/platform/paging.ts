/**
 * Paging as an async generator: pages come out strictly in order while up to
 * `window` pages are fetched ahead, and no more: a slow consumer means no new
 * requests (backpressure), a fast one keeps the request budget busy.
 *
 * What a read holds is bounded whatever the ratio of source speed to
 * consumer speed: pages asked for ahead are at most `window` and, by their
 * answers' size, `maxBytesAhead`; and pages answered (parsed) and waiting for
 * the consumer are only as many as the consumer needs. The number of pages
 * kept ahead adapts: a page that waited answered for the consumer longer than
 * SOURCE_AHEAD_MS means the source is ahead, and one page fewer is kept ahead;
 * a page the consumer had to wait for means one more (up to `window`). So when
 * the database is the slow side, one or two parsed pages wait, not `window`;
 * when the platform is, the whole window is in flight. A rate-limited source
 * answers pages in clumps (the limiter lets several leave together), and the
 * consumer takes a clump's last pages a moment after they came: that is no
 * sign the source is ahead, and keeping fewer pages asked would leave the
 * limiter's next slots with nothing to send.
 *
 * The first page (or `startPage`) is fetched alone to learn TotalCount, unless
 * a probe just told it (`expectedTotal`); the page count is re-evaluated on
 * every page, so a list that grows or shrinks
 * while it is paged is followed to its new end. A page that comes back empty
 * although TotalCount says it should hold items is fetched again
 * (`emptyPageRetries` times) and then fails the run rather than skip items.
 */
import type { Page } from './types.js';
import { PlatformError, ValidationError } from './platform-errors.js';
import { abortReason } from './clock.js';

export const MAX_PAGE_SIZE = 1000;

export interface PageResult<T> {
  items: T[];
  /** Undefined when the platform sent no TotalCount: paging then goes on until a short page. */
  totalCount: number | undefined;
  /** Size of the answer's body, when known: bounds how many pages are fetched ahead (`maxBytesAhead`). */
  bytes?: number;
}

export type PageFetcher<T> = (pageIndex: number, pageSize: number, signal: AbortSignal) => Promise<PageResult<T>>;

export interface PaginateOptions<T = unknown> {
  /** 1-based first page. Default 1. */
  startPage?: number;
  pageSize: number;
  /** Pages fetched or being fetched ahead of the consumer, at most. */
  window: number;
  signal?: AbortSignal;
  /** Extra fetches of a page that is empty while TotalCount says it is not. Default 2. */
  emptyPageRetries?: number;
  /** Called for each such extra fetch (counted as a retry). */
  onEmptyPageRetry?: (pageIndex: number) => void;
  /** Names the request in errors, e.g. `POST /lists/demo/orders/items/query`. */
  describe?: { method: string; path: string };
  /**
   * Completeness check of a page before it is believed: the name of the check
   * it fails, or null. A failing page is asked again once, then the read
   * fails with IncompleteReadError.
   */
  verify?: (result: PageResult<T>, index: number) => string | null;
  /** True when this page is the last one wanted: nothing more is fetched or prefetched. */
  isLast?: (result: PageResult<T>, index: number) => boolean;
  /** Hard ceiling on the page index; a read that goes past it fails. */
  maxPages?: number;
  /**
   * After a full last page, ask for the next one: items there mean TotalCount
   * was too low. A function decides for the last page (false: the page itself
   * shows nothing can follow, e.g. it reaches an item known to be the last).
   */
  confirmEnd?: boolean | ((result: PageResult<T>, index: number) => boolean);
  /** TotalCount as a probe just answered it: the window is filled from the start instead of after the first page. */
  expectedTotal?: number;
  /** The start page's answer, asked for already (sent beside other requests, before paging began); used once. */
  firstPage?: Promise<PageResult<T>>;
  /**
   * Bytes of pages fetched ahead, at most (estimated from the last page's
   * size); at least one page is always fetched. Keeps memory flat when items
   * are large.
   */
  maxBytesAhead?: number;
  /** Checked before each page is handed over (see heap-budget.ts). */
  heapBudget?: { check(): void };
  /**
   * Called once, right after the request for the last page TotalCount implies
   * (past the start page) is asked: a caller with a request of its own to make
   * at the end asks it now, so it leaves with the last pages.
   */
  onLastPageAsked?: () => void;
  /** Milliseconds for how long pages wait answered (default performance.now; tests pass their own). */
  now?: () => number;
}

/** A read that failed a completeness check twice; pages before `page` were handed out. */
export class IncompleteReadError extends PlatformError {
  constructor(
    readonly check: string,
    readonly page: number,
    describe: { method: string; path: string },
  ) {
    super(
      `${describe.method} ${describe.path} failed a completeness check on page ${page} (asked twice): ${check}; stopping rather than believing an incomplete read`,
      {
        method: describe.method,
        path: describe.path,
        httpStatus: 200,
        status: 0,
        retries: 1,
        platformMessage: check,
      },
    );
    this.name = 'IncompleteReadError';
  }
}

/** Throws ValidationError unless 1 <= size <= 1000 (an integer). */
export function assertPageSize(size: number, where = { method: 'POST', path: '(page size)' }): number {
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw new ValidationError(
      `${where.method} ${where.path} refused before sending: PageSize must be an integer from 1 to ${MAX_PAGE_SIZE} (got ${String(size)})`,
      { method: where.method, path: where.path, platformMessage: `PageSize ${String(size)} is out of range 1..${MAX_PAGE_SIZE}` },
    );
  }
  return size;
}

interface Fetched<T> {
  promise: Promise<PageResult<T>>;
  /** When the answer arrived (the page is parsed and waits for the consumer); undefined until then. */
  answeredAt: number | undefined;
}

/** A page that waited answered this long for the consumer shows the source is ahead of it. */
export const SOURCE_AHEAD_MS = 20;

/**
 * The pages of one read as they are asked and taken: a window of requests kept ahead of the
 * consumer, each page taken in order, retried when empty or when it fails `verify`.
 */
class PageWindow<T> {
  private readonly inFlight = new Map<number, Fetched<T>>();
  private early: Promise<PageResult<T>> | undefined;
  private lastAsked = false;
  /** Pages kept ahead of the consumer: fewer while pages wait answered for it, more while it waits for them. */
  private target: number;

  constructor(
    private readonly fetchPage: PageFetcher<T>,
    private readonly options: PaginateOptions<T>,
    readonly read: { size: number; window: number; startPage: number; emptyRetries: number; describe: { method: string; path: string } },
    private readonly controller: AbortController,
  ) {
    this.early = options.firstPage;
    this.target = read.window;
    this.now = options.now ?? (() => performance.now());
  }

  private readonly now: () => number;

  private start(index: number): void {
    if (this.inFlight.has(index)) return;
    const { startPage, size } = this.read;
    const promise = index === startPage && this.early ? this.early : this.fetchPage(index, size, this.controller.signal);
    if (index === startPage) this.early = undefined;
    const entry: Fetched<T> = { promise, answeredAt: undefined };
    promise.then(
      () => (entry.answeredAt = this.now()),
      () => undefined, // awaited later, in order; no unhandled rejection meanwhile
    );
    this.inFlight.set(index, entry);
  }

  /** Asks pages `from`..`upTo`; `pageCount` is the last page TotalCount implies. */
  askAhead(from: number, upTo: number, pageCount: number): void {
    for (let j = from; j <= upTo; j++) this.start(j);
    if (!this.lastAsked && upTo >= pageCount && pageCount > this.read.startPage) {
      this.lastAsked = true;
      this.options.onLastPageAsked?.();
    }
  }

  private async take(index: number): Promise<PageResult<T>> {
    this.start(index);
    const entry = this.inFlight.get(index)!;
    if (entry.answeredAt === undefined) this.target = Math.min(this.read.window, this.target + 1);
    else if (this.now() - entry.answeredAt >= SOURCE_AHEAD_MS) this.target = Math.max(1, this.target - 1);
    try {
      return await raceAbort(entry.promise, this.controller.signal);
    } finally {
      this.inFlight.delete(index);
    }
  }

  /** The page, asked again once when it fails `verify`; a second failure ends the read. */
  async takeVerified(index: number): Promise<PageResult<T>> {
    let result = await this.takeNonEmpty(index);
    const failed = this.options.verify?.(result, index) ?? null;
    if (failed === null) return result;
    this.options.onEmptyPageRetry?.(index);
    result = await this.takeNonEmpty(index);
    const again = this.options.verify?.(result, index) ?? null;
    if (again !== null) throw new IncompleteReadError(again, index, this.read.describe);
    return result;
  }

  private async takeNonEmpty(index: number): Promise<PageResult<T>> {
    const { size, emptyRetries, describe } = this.read;
    let result = await this.take(index);
    for (let extra = 0; result.items.length === 0 && expectsItems(result.totalCount, index, size); extra++) {
      if (extra >= emptyRetries) {
        throw new PlatformError(
          `${describe.method} ${describe.path} failed: page ${index} came back empty ${extra + 1} times although TotalCount is ${String(result.totalCount)}; stopping rather than skipping items`,
          {
            method: describe.method,
            path: describe.path,
            httpStatus: 200,
            status: 0,
            retries: extra,
            platformMessage: 'empty page inside TotalCount',
          },
        );
      }
      this.options.onEmptyPageRetry?.(index);
      result = await this.take(index);
    }
    return result;
  }

  /** A full last page may hide a tail that TotalCount does not count. */
  async confirmEnd(index: number): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const next = await this.take(index + 1);
      if (next.items.length === 0) return;
    }
    throw new IncompleteReadError(
      `TotalCount is lower than the items served (page ${index + 1}, past the end TotalCount implies, holds items)`,
      index + 1,
      this.read.describe,
    );
  }

  /** Pages to keep fetched ahead: the adaptive target, fewer when pages are big. */
  ahead(bytes: number | undefined): number {
    if (!this.options.maxBytesAhead || !bytes) return this.target;
    return Math.max(1, Math.min(this.target, Math.floor(this.options.maxBytesAhead / bytes)));
  }
}

export async function* paginate<T>(fetchPage: PageFetcher<T>, options: PaginateOptions<T>): AsyncGenerator<Page<T>, void, undefined> {
  const describe = options.describe ?? { method: 'POST', path: '(paged request)' };
  const size = assertPageSize(options.pageSize, describe);
  const window = Math.max(1, Math.floor(options.window));
  const startPage = Math.max(1, Math.floor(options.startPage ?? 1));
  const emptyRetries = Math.max(0, options.emptyPageRetries ?? 2);
  const outer = options.signal;
  if (outer?.aborted) throw abortReason(outer);

  // Our own controller: aborts what is still in flight when the consumer stops early.
  const controller = new AbortController();
  const onOuterAbort = (): void => controller.abort(abortReason(outer!));
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  const pages = new PageWindow(fetchPage, options, { size, window, startPage, emptyRetries, describe }, controller);
  const ceiling = options.maxPages ?? Number.POSITIVE_INFINITY;

  try {
    let index = startPage;
    if (options.expectedTotal !== undefined && options.expectedTotal > (startPage - 1) * size) {
      const pageCount = Math.ceil(options.expectedTotal / size);
      pages.askAhead(startPage, Math.min(startPage + window - 1, pageCount, ceiling), pageCount);
    }
    for (;;) {
      if (options.maxPages !== undefined && index > options.maxPages) {
        throw new IncompleteReadError(
          `page ceiling reached (${options.maxPages} pages): the platform keeps answering pages past what TotalCount allows`,
          index,
          describe,
        );
      }
      const result = await pages.takeVerified(index);
      const last = options.isLast?.(result, index) ?? false;
      const pageCount = last ? index : countPages(result, index, size);
      const totalCount = result.totalCount ?? (index - 1) * size + result.items.length;
      // Fill the window before handing the page over, so fetching overlaps the consumer's work.
      pages.askAhead(index + 1, Math.min(index + pages.ahead(result.bytes), pageCount, ceiling), pageCount);
      options.heapBudget?.check();
      yield { index, pageCount, totalCount, items: result.items };
      if (last) return;
      if (index >= pageCount || result.items.length === 0) {
        if (result.items.length >= size && wantsEndCheck(options.confirmEnd, result, index)) await pages.confirmEnd(index);
        return;
      }
      index++;
    }
  } finally {
    outer?.removeEventListener('abort', onOuterAbort);
    if (!controller.signal.aborted) controller.abort(new Error('paging stopped'));
  }
}

function wantsEndCheck<T>(option: PaginateOptions<T>['confirmEnd'], result: PageResult<T>, index: number): boolean {
  return typeof option === 'function' ? option(result, index) : option === true;
}

/** The promise, or the signal's reason as soon as it aborts (a fetcher that ignores the signal cannot hang us). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function expectsItems(totalCount: number | undefined, index: number, size: number): boolean {
  return totalCount !== undefined && (index - 1) * size < totalCount;
}

function countPages(result: PageResult<unknown>, index: number, size: number): number {
  if (result.totalCount !== undefined) return Math.ceil(result.totalCount / size);
  // No TotalCount: a full page may have a successor.
  return result.items.length >= size ? index + 1 : index;
}
