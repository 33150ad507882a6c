/**
 * What the configured schedules cost the account's request budget when
 * nothing changed: fires per second of each cron expression times an idle
 * run's requests (a pull 1, a push with nothing pending 0, a reconcile by
 * counts 1 at least, a full reconcile, the users directory and each
 * directory part 1 page at least), plus a pull's field metadata asked again
 * as its kept answer ages out (`lists[].fieldsMaxAgeMinutes`: at most once a
 * fire, at most once per that age). `check` prints it and `serve` logs it at
 * start; both warn when it exceeds platform.requestsPerSecond
 * (test/schedule-budget.test.ts).
 */
import { fieldsMaxAgeMs, fullReconcileSchedule, pullSchedule, type Config, type ListConfig } from '../config.js';

/** Requests an idle run of each job costs. */
export const IDLE_REQUESTS = { pull: 1, push: 0, reconcile: 1, reconcileFull: 1, users: 1, directory: 3 } as const;

export interface ScheduleBudget {
  /** Requests per second the schedules need at their idle cost. */
  needed: number;
  /** Of `needed`, the pulls' field metadata asked again as it ages out. */
  fieldMeta: number;
  /** The shortest field metadata age of a pulled list, in minutes (null: no list is pulled on a schedule). */
  fieldsMaxAgeMinutes: number | null;
  /** platform.requestsPerSecond. */
  available: number;
  /** needed / available. */
  share: number;
  /** The costliest schedules, most first: job:list and requests per second. */
  top: { target: string; perSecond: number }[];
  /** Real-time lists with a pull more often than every 15 minutes (their events keep them current). */
  busyRealtime: string[];
}

export function scheduleBudget(config: Config): ScheduleBudget {
  const costs: { target: string; perSecond: number }[] = [];
  const add = (target: string, expr: string | undefined, requests: number) => {
    if (expr && requests > 0) costs.push({ target, perSecond: firesPerSecond(expr) * requests });
  };
  const busyRealtime: string[] = [];
  const meta = { perSecond: 0, minAgeMs: Infinity };
  for (const list of config.lists) {
    const s = list.schedule;
    add(`pull:${list.name}`, pullSchedule(list), IDLE_REQUESTS.pull);
    const fields = fieldMetaPerSecond(list);
    if (fields > 0) {
      costs.push({ target: `fields:${list.name}`, perSecond: fields });
      meta.perSecond += fields;
      meta.minAgeMs = Math.min(meta.minAgeMs, fieldsMaxAgeMs(list));
    }
    add(`push:${list.name}`, s.push, IDLE_REQUESTS.push);
    add(`reconcile:${list.name}`, s.reconcile, IDLE_REQUESTS.reconcile);
    add(`reconcile-full:${list.name}`, fullReconcileSchedule(list), IDLE_REQUESTS.reconcileFull);
    const pull = pullSchedule(list);
    if (list.realtime && pull && firesPerSecond(pull) > 1 / 900) busyRealtime.push(list.name);
  }
  if (config.users.enabled) add('users', config.users.schedule, IDLE_REQUESTS.users);
  if (config.directory.enabled) add('directory', config.directory.schedule, IDLE_REQUESTS.directory);
  const needed = costs.reduce((n, c) => n + c.perSecond, 0);
  const available = config.platform.requestsPerSecond;
  return {
    needed,
    fieldMeta: meta.perSecond,
    fieldsMaxAgeMinutes: Number.isFinite(meta.minAgeMs) ? meta.minAgeMs / 60_000 : null,
    available,
    share: needed / available,
    top: costs.sort((a, b) => b.perSecond - a.perSecond).slice(0, 3),
    busyRealtime,
  };
}

/** An idle pull asks `/fields` when its kept answer is older than the list's age: once a fire, or once per that age. */
function fieldMetaPerSecond(list: ListConfig): number {
  const pull = pullSchedule(list);
  if (!pull) return 0;
  const ageSeconds = fieldsMaxAgeMs(list) / 1000;
  const fires = firesPerSecond(pull);
  return ageSeconds <= 0 ? fires : Math.min(fires, 1 / ageSeconds);
}

/** One line for `check` and serve's log. */
export function describeBudget(b: ScheduleBudget): { warning: boolean; message: string } {
  const pct = Math.round(b.share * 1000) / 10;
  const needed = Math.round(b.needed * 1000) / 1000;
  const meta =
    b.fieldMeta > 0
      ? ` (${Math.round(b.fieldMeta * 1000) / 1000} of them for field metadata asked again as it ages out, as often as every ${b.fieldsMaxAgeMinutes} min: lists[].fieldsMaxAgeMinutes)`
      : '';
  const head = `the schedules need about ${needed} requests/s when nothing changed${meta}, ${pct} % of platform.requestsPerSecond (${b.available})`;
  const realtime = b.busyRealtime.length
    ? `; real-time lists ${b.busyRealtime.join(', ')} are pulled more often than every 15 minutes, which their events make unnecessary`
    : '';
  if (b.share <= 1) return { warning: b.busyRealtime.length > 0, message: head + realtime };
  const top = b.top.map((t) => `${t.target} ${Math.round(t.perSecond * 100) / 100}/s`).join(', ');
  return {
    warning: true,
    message: `${head}: more than the account allows, so runs queue up and fires are skipped; schedule less often (costliest: ${top})${realtime}`,
  };
}

/** How often a cron expression (5 fields, or 6 with seconds) fires, per second, on average. */
export function firesPerSecond(expr: string): number {
  const f = expr.trim().split(/\s+/);
  const [sec, min, hour, dom, month, dow] = f.length === 6 ? f : ['0', ...f];
  const perDay = count(sec!, 0, 59) * count(min!, 0, 59) * count(hour!, 0, 23);
  const domAll = dom === '*' || dom === '?';
  const dowAll = dow === '*' || dow === '?';
  const domShare = count(dom!, 1, 31) / 30.44;
  const dowShare = count(dow!, 0, 6) / 7;
  const dayShare = domAll && dowAll ? 1 : domAll ? dowShare : dowAll ? domShare : Math.min(1, domShare + dowShare);
  return (perDay * dayShare * (count(month!, 1, 12) / 12)) / 86_400;
}

/** Values a cron field matches in [lo, hi]; a field it cannot read (names) counts as every value. */
function count(field: string, lo: number, hi: number): number {
  const values = new Set<number>();
  for (const part of field.split(',')) {
    const m = /^(\*|\?|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (!m) return hi - lo + 1;
    const from = m[2] === undefined ? lo : Number(m[2]);
    const to = m[3] !== undefined ? Number(m[3]) : m[2] === undefined || m[4] !== undefined ? hi : from;
    const step = m[4] === undefined ? 1 : Math.max(1, Number(m[4]));
    for (let v = from; v <= Math.min(to, hi); v += step) values.add(v);
  }
  return Math.max(1, values.size);
}
