/**
 * The account's request budget as a sliding log: the last slots handed out
 * (epoch ms, oldest first), so a reservation can let a burst go together
 * and hold each slot a full window after the one `cap` slots before it (and
 * a burst's window after the one `burst` slots before it), across every
 * process of the account (see src/platform/rate-limiter.ts). `next_slot` becomes the last slot handed
 * out: no slot is earlier than it, so slots go out in the order they were
 * asked for.
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table listsync.rate_budget add column recent_slots_ms double precision[] not null default '{}'`);
  await knex.raw(migrationSql('20261127000000_rate_budget_window', 'reserve_rate_slots'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    'drop function if exists listsync.reserve_rate_slots(text, double precision, double precision, integer, double precision, integer, integer, text)',
  );
  await knex.raw('alter table listsync.rate_budget drop column recent_slots_ms');
}
