/** Status codes of the envelope the platform answers with (HTTP status and envelope Status, as the real service sends them). */
export const STATUS = {
  ok: 0,
  badRequest: 40000,
  notIndexed: 40001,
  unauthorized: 40100,
  notFound: 40400,
  conflict: 40900,
  rateLimited: 42900,
  internal: 50000,
} as const;

/** An API failure: the envelope Status and Message, and the HTTP status to answer with. */
export class ApiError extends Error {
  readonly status: number;
  readonly httpStatus: number;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, httpStatus = 200, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.httpStatus = httpStatus;
    this.headers = headers;
  }
}

export function badRequest(message: string): ApiError {
  return new ApiError(STATUS.badRequest, message);
}
