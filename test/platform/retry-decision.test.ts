/** The retry rule, table by table: which failure is tried again, after how long, and which error a request ends with. */
import { describe, expect, it } from 'vitest';
import type { FailedAttempt } from '../../src/platform/answer-decoding.js';
import {
  AuthError,
  ConflictError,
  NotFoundError,
  PlatformError,
  RateLimitError,
  TransportError,
  ValidationError,
} from '../../src/platform/platform-errors.js';
import { type Repeat, type RetryPolicy, decideRetry } from '../../src/platform/retry-decision.js';

const policy: RetryPolicy = { retries: 6, maxRetryAfterSeconds: 120, random: () => 0.5 };

const refused = (httpStatus: number, status?: number, message?: string, retryAfterMs?: number): FailedAttempt => ({
  ok: false,
  kind: 'answer',
  httpStatus,
  status,
  message,
  retryAfterMs,
  durationMs: 5,
});
const noAnswer = (code: string): FailedAttempt => ({ ok: false, kind: 'transport', code, message: code, durationMs: 5 });
const broken: FailedAttempt = { ok: false, kind: 'malformed', httpStatus: 200, code: 'EMALFORMED', durationMs: 5 };

describe('decideRetry: tried again or not', () => {
  const cases: [string, Repeat, FailedAttempt, boolean][] = [
    ['a read after a reset connection', 'read', noAnswer('ECONNRESET'), true],
    ['a read after a timeout', 'read', noAnswer('ETIMEDOUT'), true],
    ['a read with a broken 2xx body', 'read', broken, true],
    ['a read answered 503', 'read', refused(503), true],
    ['a read answered 408', 'read', refused(408), true],
    ['a read answered 429', 'read', refused(429, 42900), true],
    ['a read with a rate-limit Message', 'read', refused(200, 12345, 'API rate limit exceeded'), true],
    ['a read with an unknown Status', 'read', refused(200, 540017, 'something odd'), true],
    ['a lookup with an unknown Status (maybe "no such item")', 'lookup', refused(200, 540017, 'something odd'), false],
    ['a lookup answered 503', 'lookup', refused(503), true],
    ['a read refused for auth', 'read', refused(401, 40100), false],
    ['a read of something absent', 'read', refused(404, 40400), false],
    ['a read refused as invalid', 'read', refused(200, 40001, 'Field Notes is not indexed'), false],
    ['a create after a reset connection (it may have arrived)', 'create', noAnswer('ECONNRESET'), false],
    ['a create after a refused connection', 'create', noAnswer('ECONNREFUSED'), true],
    ['a create after a DNS failure', 'create', noAnswer('ENOTFOUND'), true],
    ['a create answered 503', 'create', refused(503), false],
    ['a create with a broken body', 'create', broken, false],
    ['a create answered 429', 'create', refused(429), true],
    ['a create with an unknown Status', 'create', refused(200, 540017, 'already installed'), false],
    ['an update after a timeout (read back instead)', 'update', noAnswer('ETIMEDOUT'), false],
    ['an update after a refused connection', 'update', noAnswer('ECONNREFUSED'), true],
    ['an update answered 503', 'update', refused(503), true],
    ['an update with a broken body', 'update', broken, true],
    ['an update refused for its version', 'update', refused(409, 40900, 'RowVersion mismatch'), false],
    ['a delete after a reset connection', 'delete', noAnswer('ECONNRESET'), true],
    ['a delete answered 502', 'delete', refused(502), true],
    ['a delete of something absent', 'delete', refused(404, 40400), false],
  ];
  it.each(cases)('%s', (_name, repeat, failure, retry) => {
    expect(decideRetry(failure, repeat, 0, policy).retry).toBe(retry);
  });

  it.each([
    [0, true],
    [5, true],
    [6, false],
    [7, false],
  ])('attempt %i of at most 6 retries: tried again %s', (attempt, retry) => {
    expect(decideRetry(refused(503), 'read', attempt, policy).retry).toBe(retry);
  });
});

describe('decideRetry: the error a request ends with', () => {
  it.each([
    ['no answer', noAnswer('ECONNRESET'), TransportError],
    ['a broken body', broken, TransportError],
    ['429', refused(429), RateLimitError],
    ['401', refused(401, 40100), AuthError],
    ['404', refused(404, 40400), NotFoundError],
    ['Status 40001', refused(200, 40001, 'Field Notes is not indexed'), ValidationError],
    ['409', refused(409, 40900), ConflictError],
    ['500', refused(500), PlatformError],
  ])('%s', (_name, failure, errorClass) => {
    const decision = decideRetry(failure, 'read', policy.retries, policy);
    expect(decision.retry).toBe(false);
    expect(decision.errorClass).toBe(errorClass);
    expect(decision.rateLimited).toBe(errorClass === RateLimitError);
  });
});

describe('decideRetry: the wait before the next attempt', () => {
  it.each([
    ['backoff with full jitter: half of 250 ms at the first retry', refused(503), 0, () => 0.5, 125],
    ['backoff doubles: half of 1000 ms at the third', refused(503), 2, () => 0.5, 500],
    ['backoff is capped at 15 s', refused(503), 12, () => 0.5, 7500],
    ['Retry-After wins over backoff', refused(503, undefined, undefined, 3000), 0, () => 0.5, 3000],
    ['Retry-After is capped at maxRetryAfterSeconds', refused(503, undefined, undefined, 600_000), 0, () => 0.5, 120_000],
    ['none after a rate-limit refusal (the limiter pauses)', refused(429, 42900, undefined, 3000), 0, () => 0.5, 0],
  ])('%s', (_name, failure, attempt, random, delayMs) => {
    const decision = decideRetry(failure, 'read', attempt, { ...policy, retries: 20, random });
    expect(decision).toMatchObject({ retry: true, delayMs });
  });

  it('draws no jitter when Retry-After or a rate limit sets the wait', () => {
    let draws = 0;
    const random = (): number => (draws++, 0.5);
    decideRetry(refused(503, undefined, undefined, 1000), 'read', 0, { ...policy, random });
    decideRetry(refused(429), 'read', 0, { ...policy, random });
    decideRetry(refused(404, 40400), 'read', 0, { ...policy, random });
    expect(draws).toBe(0);
  });

  it.each([
    ['kept, capped', refused(429, 42900, undefined, 500_000), 120_000],
    ['absent', refused(429), undefined],
  ])('the Retry-After a rate-limit refusal carries: %s', (_name, failure, retryAfterMs) => {
    expect(decideRetry(failure, 'read', policy.retries, policy).retryAfterMs).toBe(retryAfterMs);
  });
});

describe('decideRetry: whether a write may have been applied', () => {
  const cases: [string, Repeat, FailedAttempt, boolean][] = [
    ['an update without an answer', 'update', noAnswer('ETIMEDOUT'), true],
    ['an update that surely never left', 'update', noAnswer('ECONNREFUSED'), false],
    ['an update answered 503', 'update', refused(503), true],
    ['an update with a broken body', 'update', broken, true],
    ['an update refused for the rate limit', 'update', refused(429), false],
    ['an update refused for its version', 'update', refused(409, 40900), false],
    ['a create without an answer', 'create', noAnswer('ECONNRESET'), true],
    ['a delete answered 500', 'delete', refused(500), true],
    ['a read without an answer (reads apply nothing)', 'read', noAnswer('ECONNRESET'), false],
    ['a lookup answered 503', 'lookup', refused(503), false],
  ];
  it.each(cases)('%s: %s', (_name, repeat, failure, mayHaveApplied) => {
    expect(decideRetry(failure, repeat, 0, policy).mayHaveApplied).toBe(mayHaveApplied);
  });
});
