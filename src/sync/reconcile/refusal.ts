/**
 * When a sweep's answer cannot be trusted, and what reconcile says instead of
 * marking: a broken or filtered response must never wipe the mirror. Pure
 * (tested without a database in reconcile.test.ts › reconcile guard and
 * sync/reconcile-decisions.test.ts; the CLI's exit 1 on a refusal in
 * reconcile.test.ts).
 *
 * A sweep is refused when a page came back short before the last page or
 * with items lacking an ID, when it saw fewer than `reconcileMinSeenRatio` of
 * the mirror's live rows, or when the distinct IDs it received disagree with
 * the TotalCount the platform reported beyond `totalCountTolerance`.
 */

const WHY = 'refusing to mark deletes; a broken or filtered response must not wipe the mirror';

/** Items created or deleted while the sweep pages may make the count and TotalCount differ by this much. */
export function totalCountTolerance(total: number): number {
  return Math.max(10, Math.ceil(total * 0.002));
}

/** What a sweep saw, against what the mirror holds and the platform reported. */
export interface SweepTally {
  seen: number;
  live: number;
  ratio: number;
  anomalies: readonly string[];
  minTotal: number;
  maxTotal: number;
}

/** The reason to refuse marking, or null when the sweep can be trusted. */
export function refusal(s: SweepTally): string | null {
  if (s.anomalies.length) {
    const shown = s.anomalies.slice(0, 3).join('; ') + (s.anomalies.length > 3 ? `; and ${s.anomalies.length - 3} more` : '');
    return `the sweep looks broken (${shown}): ${WHY}`;
  }
  if (s.live > 0 && s.seen < s.ratio * s.live) {
    const pct = Math.round(s.ratio * 100);
    return `saw ${s.seen} of ${s.live} live rows (< ${pct}%): ${WHY}`;
  }
  const tol = totalCountTolerance(s.maxTotal);
  if (s.seen < s.minTotal - tol || s.seen > s.maxTotal + tol) {
    const reported = s.minTotal === s.maxTotal ? `${s.maxTotal}` : `${s.minTotal}..${s.maxTotal}`;
    return `received ${s.seen} distinct IDs but the platform reported TotalCount ${reported} (tolerance ${tol}): ${WHY}`;
  }
  return null;
}

/** What is wrong with one page of a sweep: short before the last page, items without an ID. */
export function pageAnomalies(p: {
  label: string;
  index: number;
  pageCount: number;
  items: number;
  pageSize: number;
  withoutId: number;
  idField: string;
}): string[] {
  const found: string[] = [];
  if (p.index < p.pageCount && p.items < p.pageSize)
    found.push(`${p.label}page ${p.index} of ${p.pageCount} held ${p.items} of ${p.pageSize} items`);
  if (p.withoutId) found.push(`${p.label}page ${p.index}: ${p.withoutId} item(s) without ${p.idField}`);
  return found;
}

/** A range swept by counts whose distinct IDs disagree with its TotalCount beyond the tolerance, or null. */
export function rangeAnomaly(label: string, seen: number, got: { minTotal: number; maxTotal: number; lastTotal: number }): string | null {
  const tol = totalCountTolerance(got.maxTotal);
  if (seen >= got.minTotal - tol && seen <= got.maxTotal + tol) return null;
  return `${label}received ${seen} distinct IDs but the platform reported TotalCount ${got.lastTotal}`;
}

/** Why a sweep that threw ends the run: stopped by shutdown (nothing marked), or failed, keeping the cause's message. */
export function sweepFailure(message: string, aborted: boolean): { status: 'stopped' | 'failed'; message: string } {
  if (aborted) return { status: 'stopped', message: 'stopped by shutdown before the sweep ended; nothing was marked' };
  return { status: 'failed', message: `${message}; ${WHY}` };
}
