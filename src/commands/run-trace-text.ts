/** How `listsync runs` and `listsync runs show ID` print the run history and one run's trace. */
import { duration, humanNumber, table, timestamp } from '../format.js';
import type { RunEvent } from '../store/run-events.js';
import type { HistoryRun as RunRow } from '../store/run-history.js';

const took = (r: RunRow): string => (r.finished_at ? duration(r.finished_at.getTime() - r.started_at.getTime()) : 'running');

const rowsChanged = (r: RunRow): string =>
  `+${humanNumber(r.rows_inserted)} ~${humanNumber(r.rows_updated)} -${humanNumber(r.rows_deleted)}`;

/** One line per run, newest first. */
export function runsTable(runs: readonly RunRow[]): string {
  if (runs.length === 0) return 'no runs recorded';
  return table(
    ['id', 'list', 'job', 'status', 'started', 'took', 'pages', 'requests', 'retries', 'rows (+ins ~upd -del)', 'error'],
    runs.map((r) => [
      r.id,
      r.list_name,
      r.job,
      r.status,
      r.started_at,
      took(r),
      r.pages,
      r.requests,
      r.retries,
      rowsChanged(r),
      short(r.error),
    ]),
  );
}

const short = (text: string | null): string | null => (text && text.length > 70 ? `${text.slice(0, 69)}…` : text);

/** The run's row, then its trace in order, then how it ended. */
export function runText(r: RunRow, events: readonly RunEvent[]): string {
  const head = [
    `run ${r.id}: ${r.list_name} ${r.job} ${r.status}`,
    `  started ${timestamp(r.started_at)} by ${r.holder ?? '-'}, ${r.finished_at ? `finished ${timestamp(r.finished_at)} (${took(r)})` : 'still running'}`,
    `  window ${r.window_from ?? '-'} to ${r.window_to ?? '-'}${r.resumed ? ', resumed from a checkpoint' : ''}`,
    `  ${humanNumber(r.pages)} pages, ${humanNumber(r.requests)} requests, ${humanNumber(r.retries)} retries; rows inserted ${humanNumber(r.rows_inserted)}, updated ${humanNumber(r.rows_updated)}, unchanged ${humanNumber(r.rows_unchanged)}, deleted ${humanNumber(r.rows_deleted)}, failed values ${humanNumber(r.rows_failed)}; changes applied ${humanNumber(r.changes_applied)}, conflicted ${humanNumber(r.changes_conflicted)}, failed ${humanNumber(r.changes_failed)}`,
  ];
  if (r.error) head.push(`  error: ${r.error}`);
  if (events.length === 0)
    return [...head, 'trace: none recorded (a run skipped before it started, or recorded before traces were kept)'].join('\n');
  const start = r.started_at.getTime();
  const lines = events.map((e) => `  ${offset(e.at.getTime() - start).padStart(9)}  ${e.kind.padEnd(7)}  ${eventText(e)}`);
  if (r.finished_at)
    lines.push(`  ${offset(r.finished_at.getTime() - start).padStart(9)}  ${'end'.padEnd(7)}  ${r.status}${r.error ? `: ${r.error}` : ''}`);
  return [...head, 'trace:', ...lines].join('\n');
}

const offset = (ms: number): string => `+${(Math.max(0, ms) / 1000).toFixed(3)}s`;

function eventText(e: RunEvent): string {
  const d = e.detail;
  if (e.kind === 'request') {
    const answer = [
      d.httpStatus === undefined ? 'no answer' : `HTTP ${String(d.httpStatus)}`,
      d.status === undefined ? '' : `Status ${String(d.status)}`,
    ]
      .filter(Boolean)
      .join(', ');
    const attempt = Number(d.attempt) > 0 ? `, retry ${String(d.attempt)}` : '';
    return `${String(d.method)} ${String(d.endpoint)} → ${answer}: ${String(d.outcome)}${attempt} (${String(d.durationMs)} ms)`;
  }
  return Object.entries(d)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(', ');
}
