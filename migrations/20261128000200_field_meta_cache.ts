/**
 * The field metadata a pull last asked for, kept with the list's registry
 * row so a pull need not ask `/fields` on every run (src/store/registry.ts):
 * the answer as the platform sent it, when it was asked, and the keys items
 * carry that are not fields (the version, keys of the platform's own). A
 * null `field_meta_at` asks again on the next run.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table listsync.lists
      add column field_meta jsonb,
      add column field_meta_at timestamptz,
      add column item_keys jsonb not null default '[]'::jsonb`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.lists drop column field_meta, drop column field_meta_at, drop column item_keys');
}
