import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter } from '../../src/platform/backoff.js';
import {
  AuthError,
  ConflictError,
  NotFoundError,
  PlatformError,
  RateLimitError,
  ValidationError,
  classifyFailure,
  failureMessage,
  sanitizeCause,
} from '../../src/platform/platform-errors.js';

describe('classifyFailure', () => {
  it.each([
    [429, 42900, 'Too Many Requests', RateLimitError],
    [200, 42900, '', RateLimitError],
    [200, 12345, 'API rate limit exceeded', RateLimitError],
    [503, undefined, 'too many requests, slow down', RateLimitError],
    [401, 40100, 'Invalid apiKey', AuthError],
    [200, 40100, '', AuthError],
    [403, undefined, undefined, AuthError],
    [404, undefined, undefined, NotFoundError],
    [200, 40400, 'List not found', NotFoundError],
    [200, 40000, 'PageSize must be between 1 and 1000', ValidationError],
    [200, 40001, 'Field Notes is not indexed', ValidationError],
    [200, 99999, 'Field Notes is not indexed', ValidationError],
    [200, 40900, 'RowVersion mismatch', ConflictError],
    [200, 77777, 'RowVersion mismatch', ConflictError],
    [200, 540017, 'already installed', PlatformError],
    [500, undefined, undefined, PlatformError],
  ])('HTTP %s, Status %s, %j', (http, status, message, cls) => {
    expect(classifyFailure(http, status, message)).toBe(cls);
  });
});

describe('error messages', () => {
  it('names method, path, HTTP status, envelope Status and Message', () => {
    expect(
      failureMessage('POST', '/lists/demo/orders/items/query', {
        httpStatus: 200,
        status: 40001,
        platformMessage: 'Field Notes is not indexed',
      }),
    ).toBe('POST /lists/demo/orders/items/query failed: HTTP 200, Status 40001 "Field Notes is not indexed"');
    expect(failureMessage('GET', '/lists/a/b', { httpStatus: 503, retries: 3 })).toBe('GET /lists/a/b failed: HTTP 503 (after 3 retries)');
  });

  it('keeps fields and the cause', () => {
    const cause = new Error('inner');
    const err = new ValidationError(
      'x',
      { method: 'POST', path: '/p', httpStatus: 200, status: 40000, platformMessage: 'm', retries: 0 },
      { cause },
    );
    expect(err).toBeInstanceOf(PlatformError);
    expect(err.name).toBe('ValidationError');
    expect(err.cause).toBe(cause);
    expect(err).toMatchObject({
      method: 'POST',
      path: '/p',
      httpStatus: 200,
      status: 40000,
      platformMessage: 'm',
      retries: 0,
      maybeApplied: false,
    });
  });

  it('copies transport causes without options/headers and scrubs secrets', () => {
    const gotLike = Object.assign(new Error('connect ECONNREFUSED (key sekret-key-123)'), {
      code: 'ECONNREFUSED',
      options: { headers: { apiKey: 'sekret-key-123' } },
      cause: Object.assign(new Error('inner sekret-key-123'), { code: 'ECONNREFUSED' }),
    });
    const clean = sanitizeCause(gotLike, ['sekret-key-123'])!;
    expect(clean.code).toBe('ECONNREFUSED');
    expect(clean.message).toBe('connect ECONNREFUSED (key [redacted])');
    expect((clean.cause as Error).message).toBe('inner [redacted]');
    expect(JSON.stringify(clean)).not.toContain('sekret');
    expect('options' in clean).toBe(false);
    expect(clean.stack).not.toContain('sekret');
  });
});

describe('backoff', () => {
  it('full jitter under an exponential ceiling', () => {
    expect(backoffDelay(0, { random: () => 0.999 })).toBe(249);
    expect(backoffDelay(3, { random: () => 0.5 })).toBe(1000);
    expect(backoffDelay(20, { random: () => 0.999, maxMs: 15_000 })).toBe(14_985);
    expect(backoffDelay(2, { random: () => 0 })).toBe(0);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(['1'])).toBe(1000);
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
  });
});
