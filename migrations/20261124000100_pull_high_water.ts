/**
 * The time-precise pull cursor: the highest modification time (the platform's
 * local `YYYY-MM-DD HH:mm:ss`) the last successful pull can vouch for. The
 * next pull reads from it minus `lists[].overlapMinutes`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.sync_state add column high_water text');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.sync_state drop column high_water');
}
