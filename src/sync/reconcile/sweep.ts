/**
 * The two ways a reconcile finds what to look at, each leaving the candidates
 * in the run's temporary tables and a refusal (or none) for the orchestrator:
 *
 * - `sweepWholeList`: every ID, the mirror snapshotted between pages while
 *   the request budget paces them (no large join at the end);
 * - `sweepByCounts`: counts of Created ranges on both sides (counts.ts), then
 *   the IDs of the ranges that differ; the mirror rows of those ranges that
 *   were not seen are the candidates.
 */
import { performance } from 'node:perf_hooks';
import { platformDate } from '../../platform/dates.js';
import { collectIds, sweepQuery } from './collect.js';
import { DayCounts, describeRange, rangeFilters, searchByCounts } from './counts.js';
import { rangeAnomaly, refusal } from './refusal.js';
import { RECONCILE_PAGE_SIZE, type CountReport, type RunParts, type SweepOutcome } from './types.js';

/** Time per page the sweep spends snapshotting the mirror (pages arrive about every 100 ms at 10 requests/s). */
const SNAPSHOT_MS_PER_PAGE = 25;

/** Every ID of the list; the mirror is snapshotted between pages. */
export async function sweepWholeList(parts: RunParts): Promise<SweepOutcome> {
  const { list, work, timingsMs, phaseEnd } = parts;
  const anomalies: string[] = [];
  const got = await collectIds(parts, sweepQuery(list), anomalies, '', (pageStart) =>
    // Snapshot the mirror's rows while the request budget paces the pages: no big join at the end.
    work.snapshotFor(SNAPSHOT_MS_PER_PAGE - (performance.now() - pageStart)),
  );
  timingsMs.sweep = phaseEnd();
  await work.snapshotFor(Number.POSITIVE_INFINITY);
  timingsMs.candidates = phaseEnd();
  const { seen, live } = work;
  const why = refusal({ seen, live, ratio: list.reconcileMinSeenRatio, anomalies, minTotal: got.minTotal, maxTotal: got.maxTotal });
  const details = {
    seen,
    received: got.received,
    live,
    candidates: work.missing,
    totalCount: got.lastTotal,
    minTotal: got.minTotal,
    maxTotal: got.maxTotal,
  };
  return { seen, live, totalCount: got.lastTotal, details, refusal: why, counts: null };
}

/** The ranges whose counts differ, then their IDs; the rows of those ranges not seen are the candidates. */
export async function sweepByCounts(parts: RunParts): Promise<SweepOutcome> {
  const { deps, list, mapping, work, timingsMs, phaseEnd } = parts;
  const zone = deps.config.platform.timeZone;
  const day = await work.dayCounts(zone);
  const search = await searchByCounts({
    mirror: new DayCounts(day.days, day.undated),
    today: platformDate(new Date(), zone),
    pageSize: RECONCILE_PAGE_SIZE,
    signal: deps.signal,
    count: async (range) => {
      const query = { Fields: [list.idField], Filters: rangeFilters(range, mapping.createdField), PageIndex: 1, PageSize: 1 };
      return (await deps.client.queryItems(list.appID, list.listID, query, deps.signal)).totalCount;
    },
  });
  const anomalies: string[] = [];
  let received = 0;
  for (const { range } of search.toSweep) {
    const label = `${describeRange(range)}: `;
    const before = work.seen;
    const got = await collectIds(parts, sweepQuery(list, rangeFilters(range, mapping.createdField)), anomalies, label);
    received += got.received;
    const odd = rangeAnomaly(label, work.seen - before, got);
    if (odd) anomalies.push(odd);
  }
  timingsMs.sweep = phaseEnd();
  await work.scopeToRanges(
    search.toSweep.map((r) => r.range),
    zone,
  );
  timingsMs.candidates = phaseEnd();
  const counts: CountReport = {
    requests: search.requests,
    platformTotal: search.platformTotal,
    mirrorTotal: search.mirrorTotal,
    swept: search.toSweep.map((r) => describeRange(r.range)),
  };
  // The whole list's counts stand for "seen" and "live": a filtered or broken answer must not wipe the mirror.
  const why = refusal({
    seen: search.platformTotal,
    live: search.mirrorTotal,
    ratio: list.reconcileMinSeenRatio,
    anomalies,
    minTotal: search.platformTotal,
    maxTotal: search.platformTotal,
  });
  const details = { ...counts, seen: work.seen, received, candidates: work.missing, totalCount: search.platformTotal };
  return { seen: work.seen, live: search.mirrorTotal, totalCount: search.platformTotal, details, refusal: why, counts };
}
