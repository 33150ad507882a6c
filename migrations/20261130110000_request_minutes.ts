/**
 * `request_minutes`: every platform request listsync made, counted per
 * account, minute and source (a run's job kind, `realtime`, `console`,
 * `serve`, `command`), for the console's budget page. Each process adds its
 * in-memory tally every few seconds (src/request-minutes-writer.ts): one row
 * per account, minute and source, never one per request. Pruned with the run
 * history (src/serve/run-retention.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table listsync.request_minutes (
      account text not null,
      minute timestamptz not null,
      source text not null,
      requests bigint not null default 0,
      retries bigint not null default 0,
      primary key (account, minute, source)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table listsync.request_minutes');
}
