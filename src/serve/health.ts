/**
 * GET /healthz from what the process already knows, so it answers in well
 * under a second however busy the database is: the PostgreSQL-backed part
 * (the database's reachability, per list the last run, watermark and lag,
 * and what other parts add) is a snapshot refreshed in the background; a
 * request waits for a refresh at most `waitMs`. The runs serve fired are
 * known in memory (run-outcomes.ts), the queue's load too.
 *
 * 'degraded' (HTTP 503) when the database is unreachable, a list is stale or
 * its last run failed, a fire was skipped for lack of capacity, or another
 * part says so; never a 500 (test/serve-capacity.test.ts).
 *
 * GET /readyz is what a load balancer asks (a Kubernetes readiness probe):
 * 200 while the database answered the last read, so the instance can store
 * webhook callbacks; 503 while it does not. A degraded instance (a stale
 * list, a failed run) stays in service: taking it out would refuse the very
 * callbacks that bring it up to date (test/serve-capacity.test.ts › "the
 * database refusing connections during fires").
 */
import type { Config } from '../config.js';
import { credentialsRefused, type Knex } from '../db.js';
import { coerceError } from '../errors.js';
import { listStatuses, type ListStatus } from '../status.js';
import { waitFor } from './deadline.js';
import { json, type HealthExtra, type RouteHandler } from './routes.js';
import type { RunOutcomes } from './run-outcomes.js';

export interface HealthOptions {
  db: Knex;
  config: Config;
  extra?: HealthExtra;
  outcomes?: RunOutcomes;
  load?: () => { workers: number; queued: number; running: number };
  /** Background refresh period. Default 5 s. */
  refreshMs?: number;
  /** How long a request waits for a fresh snapshot before answering from the last one. Default 250 ms. */
  waitMs?: number;
}

interface Snapshot {
  /** `refused`: the server refused the credentials (it was reached; the config must change). */
  database: 'ok' | { error: string; refused?: boolean };
  lists: ListStatus[];
  extra: { degraded: boolean; [key: string]: unknown };
}

export interface Health {
  route: RouteHandler;
  /** GET /readyz: ready while the database answers. */
  ready: RouteHandler;
  /** Stops the refreshes; resolves once the read in flight settled (at most 2 s), so the pool can close. */
  stop(): Promise<void>;
}

export function createHealth(opts: HealthOptions): Health {
  const { db, config } = opts;
  let snapshot: Snapshot | undefined;
  let reading: Promise<void> | undefined;

  async function read(): Promise<void> {
    try {
      await db.raw('select 1');
    } catch (err) {
      snapshot = {
        lists: snapshot?.lists ?? [],
        extra: snapshot?.extra ?? { degraded: false },
        database: { error: coerceError(err).message, refused: credentialsRefused(err, config.database.url) !== undefined },
      };
      return;
    }
    try {
      // The answer shows no row counts, so no mirror table is scanned every refresh.
      const lists = await listStatuses(db, config, new Date(), { rows: false });
      const extra = opts.extra ? await opts.extra() : { degraded: false };
      snapshot = { database: 'ok', lists, extra };
    } catch (err) {
      snapshot = {
        lists: snapshot?.lists ?? [],
        extra: snapshot?.extra ?? { degraded: false },
        database: { error: coerceError(err).message },
      };
    }
  }
  /** One read at a time: probes arriving together share it. */
  const refresh = (): Promise<void> => (reading ??= read().finally(() => (reading = undefined)));
  const timer = setInterval(() => void refresh(), opts.refreshMs ?? 5000);
  timer.unref();
  void refresh();

  const route: RouteHandler = async (_req, res) => {
    await waitFor(refresh(), opts.waitMs ?? 250);
    json(res, ...answer(snapshot, config, opts));
  };
  const ready: RouteHandler = async (_req, res) => {
    await waitFor(refresh(), opts.waitMs ?? 250);
    const database = databaseState(snapshot);
    json(res, database === 'ok' ? 200 : 503, { status: database === 'ok' ? 'ready' : 'not ready', database });
  };
  return {
    route,
    ready,
    async stop() {
      clearInterval(timer);
      if (reading) await waitFor(reading, 2000);
    },
  };
}

/** The database as /healthz and /readyz name it: "ok", "unreachable: …", or "refused: …" when it refused the credentials. */
function databaseState(snapshot: Snapshot | undefined): string {
  if (!snapshot) return 'unknown';
  if (snapshot.database === 'ok') return 'ok';
  return `${snapshot.database.refused ? 'refused' : 'unreachable'}: ${snapshot.database.error}`;
}

function answer(snapshot: Snapshot | undefined, config: Config, opts: HealthOptions): [number, unknown] {
  const database = databaseState(snapshot);
  const lists = snapshot?.lists ?? [];
  const { degraded: extraDegraded, ...more } = snapshot?.extra ?? { degraded: false };
  const stale = lists.filter((l) => l.lagMinutes !== null && l.lagMinutes > config.serve.maxLagMinutes);
  const troubled = [...(opts.outcomes?.latest().values() ?? [])].filter(
    (o) => o.status === 'failed' || (o.status === 'skipped' && o.capacity),
  );
  const degraded = database !== 'ok' || stale.length > 0 || lists.some((l) => l.lastError) || extraDegraded === true || troubled.length > 0;
  const body = {
    status: degraded ? 'degraded' : 'ok',
    ...more,
    database,
    ...(opts.load ? { runs: { ...opts.load(), unrecorded: opts.outcomes?.unrecorded().length ?? 0 } } : {}),
    ...(troubled.length
      ? { troubled: troubled.map((o) => ({ target: o.target, status: o.status, reason: o.reason ?? null, at: o.firedAt })) }
      : {}),
    lists: lists.map((l) => ({
      list: l.list,
      lastRunAt: l.lastRunAt,
      lastRunStatus: l.lastRunStatus,
      lastSuccessAt: l.lastSuccessAt,
      watermark: l.watermark,
      lagMinutes: l.lagMinutes,
      lastError: l.lastError,
    })),
  };
  return [degraded ? 503 : 200, body];
}
