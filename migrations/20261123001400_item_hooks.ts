/**
 * Real time (list item events):
 *
 * - `webhook_subscriptions.list_name`: set on a list's item event
 *   subscriptions (resource `lists/{appID}/{listID}`, `type` = the event
 *   type); one per list and event type, so a restart reuses what it
 *   subscribed and never piles up duplicates;
 * - `realtime_stats`: per list, what the applier did (events applied,
 *   re-reads, the latest event's lag), read by `status` and `/metrics` of any
 *   process;
 * - an index for the events still to apply (replayed at start).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.webhook_subscriptions add column list_name text');
  await knex.raw(
    'create unique index webhook_subscriptions_list_type on listsync.webhook_subscriptions (list_name, type) where list_name is not null',
  );
  await knex.raw('create index webhook_inbox_unprocessed on listsync.webhook_inbox (subscription_id, id) where processed_at is null');
  await knex.raw(`
    create table listsync.realtime_stats (
      list_name text primary key,
      events_applied bigint not null default 0,
      items_reread bigint not null default 0,
      reread_requests bigint not null default 0,
      applied_from_body bigint not null default 0,
      deletes_marked bigint not null default 0,
      last_applied_at timestamptz,
      last_received_at timestamptz,
      last_lag_ms integer,
      updated_at timestamptz not null default now()
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists listsync.realtime_stats');
  await knex.raw('drop index if exists listsync.webhook_inbox_unprocessed');
  await knex.raw('drop index if exists listsync.webhook_subscriptions_list_type');
  await knex.raw('alter table listsync.webhook_subscriptions drop column if exists list_name');
}
