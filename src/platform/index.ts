/**
 * The platform API: one client (got + one queue + a rate limiter shared
 * through Postgres), typed errors, lossless JSON, paging, the query builder
 * and the platform's date formats.
 */
export * from './types.js';
export {
  PlatformClient,
  type PlatformClientOptions,
  type RequestEvent,
  type RequestOutcome,
  type ClientStats,
  type PageOptions,
  type UserPageOptions,
  type HookSubscription,
  type Envelope,
  type Repeat,
} from './client.js';
export {
  PlatformError,
  AuthError,
  RateLimitError,
  NotFoundError,
  ValidationError,
  ConflictError,
  TransportError,
  classifyFailure,
  type PlatformErrorDetails,
} from './platform-errors.js';
export { parseJson } from './json.js';
export { RateLimiter, type RateLimiterOptions, type SendSlot, type SlotSource } from './rate-limiter.js';
export { SharedBudget, budgetAccount, type SharedBudgetOptions } from './shared-budget.js';
export { paginate, assertPageSize, MAX_PAGE_SIZE, type PageFetcher, type PageResult, type PaginateOptions } from './paging.js';
export {
  query,
  where,
  asc,
  desc,
  operator,
  filterValue,
  QueryBuilder,
  Condition,
  type FilterValue,
  type PageSize,
  type ConditionOptions,
} from './query.js';
export { platformDate, platformDateTime, parsePlatformDateTime, tryParsePlatformDateTime, type Instant } from './dates.js';
export { backoffDelay, parseRetryAfter, type BackoffOptions } from './backoff.js';
export { type Clock, systemClock } from './clock.js';
