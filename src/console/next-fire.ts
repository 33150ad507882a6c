/**
 * When a cron schedule fires next, as node-cron (which runs serve's
 * schedules) computes it, in the platform's time zone. Kept per expression
 * until that instant passes, so a page of hundreds of lists with a few
 * schedules computes each once.
 */
import cron from 'node-cron';

const cache = new Map<string, Date>();

export function nextFire(expression: string, timeZone: string, now: Date = new Date()): Date | undefined {
  const key = `${timeZone} ${expression}`;
  const known = cache.get(key);
  if (known && known.getTime() > now.getTime()) return known;
  const task = cron.createTask(expression, () => undefined, { timezone: timeZone });
  try {
    const next = task.getNextRuns(1)[0];
    if (next) cache.set(key, next);
    return next;
  } finally {
    void task.destroy();
  }
}
