/**
 * Who reserved an account's request slots last. A process that finds only
 * its own reservations there is the account's only user for the moment, and
 * may send a slot its busy event loop made late: its own log of what it
 * really sent keeps it within the limit (see src/platform/rate-limiter.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // prior_*: the reservation before the last one, kept by the statement that makes the last one (RETURNING sees new values only).
  await knex.raw(
    'alter table listsync.rate_budget add column last_holder text, add column prior_holder text, add column prior_at timestamptz',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.rate_budget drop column last_holder, drop column prior_holder, drop column prior_at');
}
