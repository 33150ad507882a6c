/**
 * What the request limiter learned about the account's limit from 429
 * answers, so the next process on the account starts from it (see
 * src/platform/learned-limits.ts): whether requests may leave in bursts, the
 * extra width of the sliding window, how many 429s were counted and when the
 * last came, and when 429s kept coming at the widened margin (the configured
 * limit looks too high). Read by `status`, `/metrics` and the console
 * (src/store/rate-budget.ts `readLimiterState`).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table listsync.rate_budget
      add column bursts_allowed boolean not null default true,
      add column margin_ms integer not null default 0,
      add column throttled_total bigint not null default 0,
      add column last_throttled_at timestamptz,
      add column limit_too_high_at timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table listsync.rate_budget
      drop column bursts_allowed,
      drop column margin_ms,
      drop column throttled_total,
      drop column last_throttled_at,
      drop column limit_too_high_at`);
}
