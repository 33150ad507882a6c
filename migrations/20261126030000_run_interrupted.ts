/**
 * A run stopped by SIGINT/SIGTERM after finishing or rolling back the page in flight is
 * 'interrupted': neither a failure (alerts and failure streaks ignore it) nor a success (the
 * watermark did not move; the checkpoint is kept for the next run).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.sync_runs drop constraint sync_runs_status_check');
  await knex.raw(
    `alter table listsync.sync_runs add constraint sync_runs_status_check check (status in ('running','succeeded','failed','skipped','interrupted'))`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`update listsync.sync_runs set status = 'failed' where status = 'interrupted'`);
  await knex.raw('alter table listsync.sync_runs drop constraint sync_runs_status_check');
  await knex.raw(
    `alter table listsync.sync_runs add constraint sync_runs_status_check check (status in ('running','succeeded','failed','skipped'))`,
  );
}
