/**
 * Retry timing: exponential backoff with full jitter, and Retry-After parsing.
 */

export interface BackoffOptions {
  /** First ceiling, ms. Default 250. */
  baseMs?: number;
  /** Largest ceiling, ms. Default 15 000. */
  maxMs?: number;
  random?: () => number;
}

/** Delay before retry number `retry` (0 for the first retry): uniform in [0, min(max, base * 2^retry)). */
export function backoffDelay(retry: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 250;
  const max = options.maxMs ?? 15_000;
  const random = options.random ?? Math.random;
  const ceiling = Math.min(max, base * 2 ** Math.min(retry, 30));
  return Math.floor(random() * ceiling);
}

/**
 * Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when
 * absent or unreadable. Negative dates become 0.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
