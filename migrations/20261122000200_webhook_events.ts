/**
 * Webhook reporting and lookups:
 *
 * - `listsync.workflow_task_events`: a view over the inbox with the fields of
 *   a `workflow/tasks` callback body pulled out as text columns (the body is
 *   stored whole, so fields the platform adds later stay reachable in `body`).
 *   `created` is the platform's local date-time string as sent.
 * - an index to count a subscription's events (`listsync hooks list`, status).
 *
 * Deduplication needs no constraint: the receiver takes a transaction-scoped
 * advisory lock on the dedup key before it looks for the same delivery within
 * the window, so two concurrent copies are serialised.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index if not exists webhook_inbox_subscription_received on listsync.webhook_inbox (subscription_id, received_at)');
  await knex.raw(`
    create or replace view listsync.workflow_task_events as
    select i.id,
           i.subscription_id,
           i.received_at,
           i.processed_at,
           i.channel,
           i.type,
           i.body ->> 'TaskID'     as task_id,
           i.body ->> 'WorkflowID' as workflow_id,
           i.body ->> 'ListDataID' as list_data_id,
           i.body ->> 'Event'      as event,
           i.body ->> 'Assignee'   as assignee,
           i.body ->> 'Created'    as created,
           i.body
      from listsync.webhook_inbox i
      join listsync.webhook_subscriptions s on s.id = i.subscription_id
     where s.resource = 'workflow/tasks'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop view if exists listsync.workflow_task_events');
  await knex.raw('drop index if exists listsync.webhook_inbox_subscription_received');
}
