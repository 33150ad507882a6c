/**
 * listsync's own tables, in schema `listsync`: list registry, sync state and
 * checkpoints, run history, the outbox of local changes, conflicts, webhook
 * subscriptions and inbox, job leases, and the shared request budget.
 */
import type { Knex } from 'knex';

const S = 'listsync';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create schema if not exists ??', [S]);

  await knex.schema.withSchema(S).createTable('lists', (t) => {
    t.text('name').primary();
    t.text('app_id').notNullable();
    t.text('list_id').notNullable();
    t.text('table_name').notNullable();
    t.jsonb('fields').notNullable().defaultTo('[]');
    t.text('fingerprint').notNullable().defaultTo('');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // One row per (list, job): the watermark (a platform calendar date) and the
  // in-flight checkpoint of an unfinished run.
  await knex.schema.withSchema(S).createTable('sync_state', (t) => {
    t.text('list_name').notNullable();
    t.text('job').notNullable();
    t.date('watermark');
    t.jsonb('checkpoint');
    t.timestamp('last_success_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['list_name', 'job']);
  });

  await knex.schema.withSchema(S).createTable('sync_runs', (t) => {
    t.bigIncrements('id').primary();
    t.text('list_name').notNullable();
    t.text('job').notNullable();
    t.text('status').notNullable().defaultTo('running');
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true });
    t.date('window_from');
    t.date('window_to');
    t.integer('pages').notNullable().defaultTo(0);
    t.integer('requests').notNullable().defaultTo(0);
    t.integer('retries').notNullable().defaultTo(0);
    t.integer('rows_inserted').notNullable().defaultTo(0);
    t.integer('rows_updated').notNullable().defaultTo(0);
    t.integer('rows_unchanged').notNullable().defaultTo(0);
    t.integer('rows_deleted').notNullable().defaultTo(0);
    t.integer('rows_undeleted').notNullable().defaultTo(0);
    t.integer('rows_failed').notNullable().defaultTo(0);
    t.integer('rows_skipped_pending').notNullable().defaultTo(0);
    t.integer('changes_applied').notNullable().defaultTo(0);
    t.integer('changes_conflicted').notNullable().defaultTo(0);
    t.integer('changes_failed').notNullable().defaultTo(0);
    t.boolean('resumed').notNullable().defaultTo(false);
    t.text('holder');
    t.text('error');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.index(['list_name', 'job', 'started_at']);
  });
  await knex.raw(
    `alter table ${S}.sync_runs add constraint sync_runs_status_check check (status in ('running','succeeded','failed','skipped'))`,
  );

  // Local changes captured by triggers on the mirror tables.
  await knex.schema.withSchema(S).createTable('outbox', (t) => {
    t.bigIncrements('id').primary();
    t.text('list_name').notNullable();
    t.text('op').notNullable();
    t.text('item_id');
    // For creates: the mirror row's provisional key, replaced by the platform's ID after the create.
    t.text('local_id');
    t.jsonb('changes').notNullable().defaultTo('{}');
    t.bigInteger('base_version');
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('last_error');
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('applied_at', { useTz: true });
    t.index(['list_name', 'status']);
  });
  await knex.raw(`alter table ${S}.outbox add constraint outbox_op_check check (op in ('update','create'))`);
  await knex.raw(
    `alter table ${S}.outbox add constraint outbox_status_check check (status in ('pending','sending','applied','conflict','failed'))`,
  );
  // Several edits of one item before a push coalesce into one open change.
  await knex.raw(
    `create unique index outbox_one_open_change on ${S}.outbox (list_name, item_id) where status in ('pending','sending','conflict') and item_id is not null`,
  );

  await knex.schema.withSchema(S).createTable('conflicts', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('outbox_id').references('id').inTable(`${S}.outbox`).onDelete('SET NULL');
    t.text('list_name').notNullable();
    t.text('item_id').notNullable();
    t.text('policy').notNullable();
    t.bigInteger('base_version');
    t.bigInteger('remote_version');
    t.jsonb('local').notNullable();
    t.jsonb('remote');
    t.text('status').notNullable().defaultTo('open');
    t.text('resolution');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('resolved_at', { useTz: true });
    t.index(['list_name', 'status']);
  });

  await knex.schema.withSchema(S).createTable('webhook_subscriptions', (t) => {
    t.bigIncrements('id').primary();
    t.text('platform_id');
    t.text('resource').notNullable();
    t.text('channel').notNullable();
    t.integer('type').notNullable();
    t.text('token').notNullable().unique();
    t.text('callback_url').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.withSchema(S).createTable('webhook_inbox', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('subscription_id').notNullable().references('id').inTable(`${S}.webhook_subscriptions`).onDelete('CASCADE');
    t.text('dedup_key').notNullable();
    t.text('channel').notNullable();
    t.integer('type').notNullable();
    t.jsonb('headers').notNullable().defaultTo('{}');
    t.jsonb('body').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('processed_at', { useTz: true });
    t.index(['dedup_key', 'received_at']);
  });

  // Job leases: one run per list and job across processes; also elects one serve replica per scheduled fire.
  await knex.schema.withSchema(S).createTable('leases', (t) => {
    t.text('name').primary();
    t.text('holder').notNullable();
    t.timestamp('acquired_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });

  // The account-wide request budget shared by every process using the same account.
  await knex.schema.withSchema(S).createTable('rate_budget', (t) => {
    t.text('account').primary();
    t.timestamp('next_slot', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('paused_until', { useTz: true, precision: 6 });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'rate_budget',
    'leases',
    'webhook_inbox',
    'webhook_subscriptions',
    'conflicts',
    'outbox',
    'sync_runs',
    'sync_state',
    'lists',
  ]) {
    await knex.schema.withSchema(S).dropTableIfExists(table);
  }
}
