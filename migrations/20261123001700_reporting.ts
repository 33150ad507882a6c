/**
 * The reporting surface's own state:
 *
 * - `listsync.schema_changes`: every change listsync saw in a list's fields
 *   (added, removed, back, renamed on the platform, widened...), written in
 *   the same transaction as the DDL it describes; `run_id` is the run that saw
 *   it (filled in once the run exists).
 * - `listsync.lists.history`: whether the list keeps `<table>_history`, so code
 *   that loads a mapping without running DDL (push, reconcile, events) writes
 *   history exactly when the pull set it up; `title`, the list's title on the
 *   platform, for the table's comment.
 * - `listsync.try_cast(text, anyelement)`: the value cast to the second
 *   argument's type, or NULL when it does not cast. A reporting view keeps a
 *   widened column's old type with it when reports depend on the view.
 */
import type { Knex } from 'knex';
import { migrationSql } from '../src/migration-sql.js';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table listsync.schema_changes (
      id bigserial primary key,
      list_name text not null,
      kind text not null,
      field text,
      column_name text,
      before text,
      after text,
      message text not null,
      run_id bigint,
      seen_at timestamptz not null default now()
    )`);
  await knex.raw('create index schema_changes_by_list on listsync.schema_changes (list_name, id desc)');
  await knex.raw('alter table listsync.lists add column history boolean not null default false, add column title text');
  await knex.raw(migrationSql('20261123001700_reporting', 'try_cast'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function if exists listsync.try_cast(text, anyelement)');
  await knex.raw('alter table listsync.lists drop column history, drop column title');
  await knex.raw('drop table listsync.schema_changes');
}
