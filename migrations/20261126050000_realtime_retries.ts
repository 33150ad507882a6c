/**
 * Real time that never drops an event, and item subscriptions made once:
 *
 * - `webhook_inbox.attempts`, `last_error`, `last_attempt_at`: an item event
 *   whose apply failed stays unprocessed and carries how often it was tried
 *   and why it failed last (the applier retries it with backoff);
 * - `webhook_unsubscribes`: item event subscriptions listsync made on the
 *   platform and no longer uses (replaced, or made twice). Each platform ID is
 *   kept until the platform confirmed its removal; every `serve` start tries
 *   the ones left.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table listsync.webhook_inbox
    add column attempts integer not null default 0,
    add column last_error text,
    add column last_attempt_at timestamptz`);
  await knex.raw(`
    create table listsync.webhook_unsubscribes (
      resource text not null,
      platform_id text not null,
      list_name text,
      type integer,
      callback_url text,
      retired_at timestamptz not null default now(),
      attempts integer not null default 0,
      last_error text,
      primary key (resource, platform_id)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists listsync.webhook_unsubscribes');
  await knex.raw(`alter table listsync.webhook_inbox
    drop column if exists attempts,
    drop column if exists last_error,
    drop column if exists last_attempt_at`);
}
