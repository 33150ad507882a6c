/**
 * Pure: whether a failed attempt is tried again, after how long, and, when
 * not, which error class the request ends with.
 *
 * - Tried again: no answer (network errors, timeouts, dropped connections),
 *   a broken 2xx body, HTTP 5xx and 408, and refusals for the rate limit
 *   (429, Status 42900, a Message saying so), up to `retries` times. A read
 *   (`read`) answered with an unknown non-zero Status is tried again too.
 * - A create is tried again only when it surely never left (connection
 *   refused, DNS failure) or was refused for the rate limit; an update
 *   without an answer likewise (the push reads the item back instead).
 * - The wait: none after a rate-limit refusal (the limiter pauses every
 *   request instead), else Retry-After (capped at `maxRetryAfterSeconds`),
 *   else exponential backoff with full jitter (backoff.ts).
 * - A write whose attempt may have reached the server (no answer unless it
 *   surely never left, a broken body, a 5xx) may have been applied: the
 *   error it ends with says so (`maybeApplied`).
 *
 * Tested table by table in test/platform/retry-decision.test.ts.
 */
import type { FailedAttempt } from './answer-decoding.js';
import { backoffDelay } from './backoff.js';
import {
  PlatformError,
  RateLimitError,
  TransportError,
  type PlatformErrorClass,
  classifyFailure,
  surelyNotSent,
} from './platform-errors.js';

/**
 * How a request may be repeated: `read` always (GET and read-only POSTs),
 * `lookup` (a read by ID) like `read`, except that an answer with an unknown
 * non-zero Status is final (it may mean "no such item"; the caller asks again
 * another way, see src/platform/item-lookup.ts), `create` only when it surely did not arrive or was refused with 429,
 * `update` (version-checked) and `delete` (a repeat finds nothing to delete)
 * on transport errors and 5xx too.
 */
export type Repeat = 'read' | 'lookup' | 'create' | 'update' | 'delete';

export interface RetryPolicy {
  /** Most attempts after the first. */
  retries: number;
  maxRetryAfterSeconds: number;
  /** Random source for the backoff's jitter; drawn only when a backoff is waited. */
  random: () => number;
}

interface Verdict {
  errorClass: PlatformErrorClass | typeof TransportError;
  rateLimited: boolean;
  /** This attempt of a write may have reached the server and been applied. */
  mayHaveApplied: boolean;
  /** The Retry-After asked for, capped at `maxRetryAfterSeconds`. */
  retryAfterMs: number | undefined;
}

export type RetryDecision = Verdict & ({ retry: false } | { retry: true; delayMs: number });

/** What follows failed attempt number `attempt` (0 for the first) of a request repeated as `repeat`. */
export function decideRetry(failure: FailedAttempt, repeat: Repeat, attempt: number, policy: RetryPolicy): RetryDecision {
  const errorClass = failure.kind === 'answer' ? classifyFailure(failure.httpStatus, failure.status, failure.message) : TransportError;
  const rateLimited = errorClass === RateLimitError;
  const retryable =
    isRetryable(repeat, failure, rateLimited) || (repeat === 'read' && failure.kind === 'answer' && errorClass === PlatformError);
  const mayHaveApplied = repeat !== 'read' && repeat !== 'lookup' && mayHaveReachedServer(failure, rateLimited);
  let retryAfterMs = failure.retryAfterMs;
  if (retryAfterMs !== undefined) retryAfterMs = Math.min(retryAfterMs, policy.maxRetryAfterSeconds * 1000);
  const verdict: Verdict = { errorClass, rateLimited, mayHaveApplied, retryAfterMs };
  if (!retryable || attempt >= policy.retries) return { ...verdict, retry: false };
  const delayMs = rateLimited ? 0 : (retryAfterMs ?? backoffDelay(attempt, { random: policy.random }));
  return { ...verdict, retry: true, delayMs };
}

function isRetryable(repeat: Repeat, r: FailedAttempt, rateLimited: boolean): boolean {
  if (rateLimited) return true; // refused, so nothing was applied
  const transient =
    r.kind === 'transport' ||
    r.kind === 'malformed' ||
    (r.kind === 'answer' && r.httpStatus !== undefined && (r.httpStatus >= 500 || r.httpStatus === 408));
  if (!transient) return false;
  if (repeat === 'create') return r.kind === 'transport' && surelyNotSent(r.code);
  // A PATCH without an answer (a timeout, a cut connection) may have been applied: the caller reads the item
  // by ID before sending it again (src/sync/push.ts), instead of this loop resending it blind.
  if (repeat === 'update' && r.kind === 'transport') return surelyNotSent(r.code);
  return true;
}

function mayHaveReachedServer(r: FailedAttempt, rateLimited: boolean): boolean {
  if (rateLimited) return false;
  if (r.kind === 'transport') return !surelyNotSent(r.code);
  if (r.kind === 'malformed') return true;
  return r.httpStatus !== undefined && r.httpStatus >= 500;
}
