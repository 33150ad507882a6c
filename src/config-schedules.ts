/**
 * Pure: the schedules a list's settings imply beside the ones written: the
 * full reconcile's (weekly while `schedule.reconcile` is set), a real-time
 * list's pull (hourly), and how long kept field metadata serves a pull.
 * Tested table by table in test/config-schema.test.ts.
 */
import type { ListConfig } from './config-schema.js';

/** When the full reconcile runs for a list whose `schedule.reconcile` is set and `schedule.reconcileFull` is not: Sundays 03:17. */
export const FULL_RECONCILE_SCHEDULE = '17 3 * * 0';

/** The full reconcile's schedule of a list, or undefined when it is not scheduled. */
export function fullReconcileSchedule(list: ListConfig): string | undefined {
  const s = list.schedule;
  if (s.reconcileFull === 'off') return undefined;
  return s.reconcileFull ?? (s.reconcile ? FULL_RECONCILE_SCHEDULE : undefined);
}

/**
 * The pull of a real-time list that sets no `schedule.pull`: hourly. Its events keep it current;
 * the pull only catches what no event told (a delivery the platform gave up on).
 */
export const REALTIME_PULL_SCHEDULE = '0 * * * *';

/** How long a pull uses kept field metadata (`fieldsMaxAgeMinutes`, or the older `fieldsMaxAgeHours`), in ms. */
export function fieldsMaxAgeMs(list: Pick<ListConfig, 'fieldsMaxAgeMinutes' | 'fieldsMaxAgeHours'>): number {
  return list.fieldsMaxAgeHours !== undefined ? list.fieldsMaxAgeHours * 3_600_000 : list.fieldsMaxAgeMinutes * 60_000;
}

/** A list's pull schedule, or undefined when it is not pulled on a schedule. */
export function pullSchedule(list: ListConfig): string | undefined {
  return list.schedule.pull ?? (list.realtime ? REALTIME_PULL_SCHEDULE : undefined);
}
