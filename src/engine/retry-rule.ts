/**
 * Whether a failed job is tried again (with backoff, before its next fire):
 * yes for what passes by itself (the platform answering 5xx, 429 or not at
 * all, the database away); never for what the operator must fix (the config,
 * the usage, an API key refused: the exit-2 class) nor for a refusal that
 * would come again (a request the platform rejects as invalid, a list gone).
 */
import { isConnectionError } from '../db.js';
import { ConfigError, UsageError } from '../errors.js';
import {
  AuthError,
  ConflictError,
  NotFoundError,
  PlatformError,
  RateLimitError,
  TransportError,
  ValidationError,
} from '../platform/platform-errors.js';

export function isTransient(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ConfigError || e instanceof UsageError || e instanceof AuthError) return false;
  }
  if (isConnectionError(err)) return true;
  if (err instanceof RateLimitError || err instanceof TransportError) return true;
  if (err instanceof NotFoundError || err instanceof ValidationError || err instanceof ConflictError) return false;
  // By the HTTP answer, never by the envelope's Status: no answer at all, or the server failing.
  if (err instanceof PlatformError) return err.httpStatus === undefined || err.httpStatus >= 500;
  return false;
}
