/**
 * Errors raised by the platform client, and the one place that turns an
 * HTTP status + envelope Status + Message into an error class.
 *
 * Messages read like
 *   POST /lists/demo/orders/items/query failed: HTTP 200, Status 40001 "Field Notes is not indexed"
 * and never contain the apiKey, a query string or got's request options
 * (which carry the headers): transport causes are copied into plain errors.
 */
import { scrubSecrets } from '../secrets.js';

export interface PlatformErrorDetails {
  /** HTTP status of the last attempt; undefined when no response arrived (or none was sent). */
  httpStatus?: number;
  /** The envelope's Status of the last attempt, when there was an envelope. */
  status?: number;
  /** The envelope's Message (or the transport failure), as the platform put it. */
  platformMessage?: string;
  method: string;
  /** Path relative to the base URL, without query string, e.g. `/lists/demo/orders/items/query`. */
  path: string;
  /** Attempts made after the first one. */
  retries?: number;
  /**
   * An attempt of this write may have reached the server and been applied
   * although no success came back (timeout, 5xx, dropped connection, broken
   * body). For a PATCH that was then retried, a RowVersion mismatch with
   * `maybeApplied` can be "our own earlier attempt already applied it":
   * re-read the item and compare. For a create (never retried once it may
   * have arrived), the item may exist: look for it before creating again.
   */
  maybeApplied?: boolean;
  /** The Retry-After the platform asked for, in milliseconds. */
  retryAfterMs?: number;
}

export class PlatformError extends Error {
  override name = 'PlatformError';
  readonly httpStatus: number | undefined;
  readonly status: number | undefined;
  readonly platformMessage: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly retries: number;
  readonly maybeApplied: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: PlatformErrorDetails, options?: { cause?: unknown }) {
    super(message, options);
    this.httpStatus = details.httpStatus;
    this.status = details.status;
    this.platformMessage = details.platformMessage;
    this.method = details.method;
    this.path = details.path;
    this.retries = details.retries ?? 0;
    this.maybeApplied = details.maybeApplied ?? false;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** Missing, wrong or insufficient apiKey (HTTP 401/403, Status 40100/40300). Never retried. */
export class AuthError extends PlatformError {
  override name = 'AuthError';
}

/** The account's request budget was exceeded (HTTP 429, Status 42900, or a Message saying so). */
export class RateLimitError extends PlatformError {
  override name = 'RateLimitError';
}

/** Unknown app, list or item (HTTP 404, Status 40400). Never retried. */
export class NotFoundError extends PlatformError {
  override name = 'NotFoundError';
}

/**
 * The request is invalid (Status 40000/40001, HTTP 400/422, a Message about
 * PageSize or a non-indexed field), or was refused before sending (PageSize
 * over 1000). Never retried.
 */
export class ValidationError extends PlatformError {
  override name = 'ValidationError';
}

/**
 * The update's RowVersion did not match (HTTP 409, Status 40900, or a Message
 * about the version). Check `maybeApplied`: after a retried PATCH this may be
 * our own earlier attempt. Never retried.
 */
export class ConflictError extends PlatformError {
  override name = 'ConflictError';
}

/** No usable answer: connection failed or dropped, timed out, or a 2xx body that is not the envelope. After retries. */
export class TransportError extends PlatformError {
  override name = 'TransportError';
  /** Node / got error code, e.g. ECONNREFUSED, ETIMEDOUT, ECONNRESET, EMALFORMED. */
  readonly code: string | undefined;
  constructor(message: string, details: PlatformErrorDetails & { code?: string }, options?: { cause?: unknown }) {
    super(message, details, options);
    this.code = details.code;
  }
}

export type PlatformErrorClass =
  typeof PlatformError | typeof AuthError | typeof RateLimitError | typeof NotFoundError | typeof ValidationError | typeof ConflictError;

const RATE_LIMIT_MESSAGE = /rate[ -]?limit|too many requests|throttl/i;
const VALIDATION_MESSAGE = /page ?size|not indexed|is not an indexed|invalid (filter|sort|field)/i;
const CONFLICT_MESSAGE = /row ?version|version mismatch/i;

/** Which error class a non-success answer belongs to. Rate limiting is checked first. */
export function classifyFailure(
  httpStatus: number | undefined,
  status: number | undefined,
  message: string | undefined,
): PlatformErrorClass {
  const msg = message ?? '';
  if (httpStatus === 429 || status === 42900 || RATE_LIMIT_MESSAGE.test(msg)) return RateLimitError;
  if (httpStatus === 401 || httpStatus === 403 || status === 40100 || status === 40300) return AuthError;
  if (httpStatus === 404 || status === 40400) return NotFoundError;
  if (status === 40000 || status === 40001 || httpStatus === 400 || httpStatus === 422) return ValidationError;
  if (httpStatus === 409 || status === 40900) return ConflictError;
  if (status !== undefined && status !== 0 && CONFLICT_MESSAGE.test(msg)) return ConflictError;
  if (VALIDATION_MESSAGE.test(msg)) return ValidationError;
  return PlatformError;
}

/** `POST /lists/x/y/items/query failed: HTTP 200, Status 40001 "Field Notes is not indexed"`. */
export function failureMessage(
  method: string,
  path: string,
  parts: { httpStatus?: number; status?: number; platformMessage?: string; retries?: number },
): string {
  const bits: string[] = [];
  if (parts.httpStatus !== undefined) bits.push(`HTTP ${parts.httpStatus}`);
  if (parts.status !== undefined) bits.push(`Status ${parts.status}`);
  let text = bits.join(', ');
  if (parts.platformMessage) text = text ? `${text} ${JSON.stringify(parts.platformMessage)}` : parts.platformMessage;
  const retried = parts.retries ? ` (after ${parts.retries} ${parts.retries === 1 ? 'retry' : 'retries'})` : '';
  return `${method} ${path} failed: ${text || 'no answer'}${retried}`;
}

/**
 * A transport failure copied into a plain error: name, code, message and the
 * chain of causes, but none of got's `options`/`request`/`response` (which
 * hold the apiKey header). Secrets are scrubbed from the messages.
 */
export class TransportCause extends Error {
  override name: string;
  readonly code: string | undefined;
  constructor(name: string, message: string, code: string | undefined, cause?: TransportCause) {
    super(message, cause ? { cause } : undefined);
    this.name = name;
    this.code = code;
  }
}

export function sanitizeCause(err: unknown, secrets: readonly string[], depth = 0): TransportCause | undefined {
  if (err === null || err === undefined || depth > 4) return undefined;
  if (!(err instanceof Error)) return new TransportCause('Error', scrub(String(err), secrets), undefined);
  const rawCode: unknown = (err as { code?: unknown }).code;
  const code = typeof rawCode === 'string' ? rawCode : undefined;
  const inner = sanitizeCause((err as { cause?: unknown }).cause, secrets, depth + 1);
  const out = new TransportCause(err.name, scrub(err.message, secrets), code, inner);
  if (err.stack) out.stack = scrub(err.stack, secrets);
  return out;
}

/** Secrets in raw, URL-encoded and JSON-escaped forms replaced with [redacted]. */
export function scrub(text: string, secrets: readonly string[]): string {
  return scrubSecrets(text, secrets);
}

/** True for errors of a request that never reached the server (nothing could have been applied). */
export function surelyNotSent(code: string | undefined): boolean {
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH';
}
