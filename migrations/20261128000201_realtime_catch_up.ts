/**
 * When a real-time list last had a gap (callbacks refused: the database
 * away, a shutdown; or the process down) and when the incremental pull that
 * caught it up succeeded (src/realtime/catch-up.ts), for `status`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table listsync.realtime_stats
      add column last_gap_at timestamptz,
      add column last_gap_reason text,
      add column caught_up_at timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table listsync.realtime_stats drop column last_gap_at, drop column last_gap_reason, drop column caught_up_at');
}
