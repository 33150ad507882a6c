/**
 * The settings a mirror table's typed columns were converted under (today the
 * platform's time zone), kept beside the list's registry entry: when a setting
 * changes, the pull re-derives the affected columns from `_raw` instead of
 * leaving values converted under settings the mirror no longer has.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.lists add column conversion jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.lists drop column conversion');
}
