/**
 * The log of /v1 requests and the counters tests assert on (requests per
 * sliding second per key, concurrency, 429s). API key values are never
 * recorded: only whether one was present.
 */

export interface RequestLogEntry {
  seq: number;
  method: string;
  /** Path without the query string. */
  path: string;
  route: string;
  apiKeyPresent: boolean;
  /** Arrival, ms since the epoch (fractional). */
  startedAt: number;
  finishedAt: number | null;
  /** HTTP status sent, null when the connection was dropped or timed out. */
  status: number | null;
  envelopeStatus: number | null;
  fault?: string;
  pageIndex?: number;
  /** The request body, truncated. */
  body?: string;
}

export interface EmulatorStats {
  total: number;
  byRoute: Record<string, number>;
  /** 429 answers sent (rate limit and storms). */
  rateLimited: number;
  /** Most /v1 arrivals with one API key inside any 1000 ms window, over all keys. */
  maxPerSlidingSecond: number;
  /** Most /v1 requests being handled at once. */
  maxInFlight: number;
  inFlight: number;
  /** Arrivals per wall-clock second (epoch seconds), oldest first. */
  perSecond: Array<{ second: number; count: number }>;
}

const MAX_ENTRIES = 100_000;
const MAX_BODY = 2000;
const MAX_SECONDS = 3600;

/** The request body as logged: truncated, omitted when empty. */
export function truncateBody(body: string): string | undefined {
  if (body === '') return undefined;
  return body.length > MAX_BODY ? `${body.slice(0, MAX_BODY)}…` : body;
}

export function nowEpochMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Window {
  times: number[];
  head: number;
}

export class RequestLog {
  private entries: RequestLogEntry[] = [];
  private seq = 0;
  private total = 0;
  private byRoute: Record<string, number> = {};
  private rateLimited = 0;
  private maxPerSlidingSecond = 0;
  private maxInFlight = 0;
  private inFlight = 0;
  private perSecond = new Map<number, number>();
  private windows = new Map<string, Window>();

  /** Records an arrival. `apiKey` is only used to count per key; it is not stored in any entry. */
  begin(method: string, path: string, route: string, apiKey: string | undefined): RequestLogEntry {
    const startedAt = nowEpochMs();
    this.total++;
    this.byRoute[route] = (this.byRoute[route] ?? 0) + 1;
    this.inFlight++;
    if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
    const sec = Math.floor(startedAt / 1000);
    this.perSecond.set(sec, (this.perSecond.get(sec) ?? 0) + 1);
    if (this.perSecond.size > MAX_SECONDS) this.perSecond.delete(this.perSecond.keys().next().value as number);
    const k = apiKey ?? '';
    let w = this.windows.get(k);
    if (!w) {
      w = { times: [], head: 0 };
      this.windows.set(k, w);
    }
    w.times.push(startedAt);
    while ((w.times[w.head] as number) <= startedAt - 1000) w.head++;
    if (w.head > 4096) {
      w.times = w.times.slice(w.head);
      w.head = 0;
    }
    const inWindow = w.times.length - w.head;
    if (inWindow > this.maxPerSlidingSecond) this.maxPerSlidingSecond = inWindow;

    const entry: RequestLogEntry = {
      seq: ++this.seq,
      method,
      path,
      route,
      apiKeyPresent: apiKey !== undefined,
      startedAt,
      finishedAt: null,
      status: null,
      envelopeStatus: null,
    };
    this.entries.push(entry);
    if (this.entries.length > MAX_ENTRIES) this.entries = this.entries.slice(this.entries.length - MAX_ENTRIES / 2);
    return entry;
  }

  finish(entry: RequestLogEntry, status: number | null, envelopeStatus: number | null): void {
    if (entry.finishedAt !== null) return;
    entry.finishedAt = nowEpochMs();
    entry.status = status;
    entry.envelopeStatus = envelopeStatus;
    if (status === 429) this.rateLimited++;
    this.inFlight--;
  }

  /** Entries with seq > since. */
  since(since = 0): RequestLogEntry[] {
    const i = this.entries.findIndex((e) => e.seq > since);
    return i === -1 ? [] : this.entries.slice(i);
  }

  clear(): void {
    this.entries = [];
    this.total = 0;
    this.byRoute = {};
    this.rateLimited = 0;
    this.maxPerSlidingSecond = 0;
    this.maxInFlight = this.inFlight;
    this.perSecond.clear();
    this.windows.clear();
  }

  stats(): EmulatorStats {
    return {
      total: this.total,
      byRoute: { ...this.byRoute },
      rateLimited: this.rateLimited,
      maxPerSlidingSecond: this.maxPerSlidingSecond,
      maxInFlight: this.maxInFlight,
      inFlight: this.inFlight,
      perSecond: [...this.perSecond].map(([second, count]) => ({ second, count })),
    };
  }
}
