/**
 * Progress of a long command, one way for every job: on a terminal a bar on stderr
 * (`orders pull [====    ] 12/200 pages | 11,900 items | 2,310 items/s | ETA 1m20s`, numbers for
 * people), else one `page` log line per page with the shape of every other line (level, time,
 * name, list, job, runId; plain numbers), at info level.
 *
 * On a terminal:
 * - a retry shows on the bar as it happens (`12/200 pages | retrying: HTTP 502, retry 2 | …`) until a request succeeds;
 * - the bar's line is ended before any other line is written (src/terminal-line.ts), so an error,
 *   a log line or a signal notice never lands on it;
 * - a resumed run's bar counts the whole run: it starts at the checkpoint's page, and its ETA is
 *   the pages left at the pace of this process's pages (never "ETA 0s" at the start).
 * (test/terminal-progress.test.ts, test/terminal-failure.test.ts)
 */
import { SingleBar, Presets } from 'cli-progress';
import type { AppContext } from '../context.js';
import { duration, humanNumber } from '../format.js';
import { type TracedRequest, withRequestTrace } from '../platform/request-trace.js';
import type { PageDone } from '../sync/run-job.js';
import { lineEnded, lineLeftOpen } from '../terminal-line.js';

export interface ProgressReporter {
  onPage(p: PageDone): void;
  /** Runs the job: the requests it makes show on the bar (retries as they happen). */
  watch<T>(job: () => Promise<T>): Promise<T>;
  /** Ends the bar on a line of its own; `complete`: the run read every page, so the bar shows N/N. */
  stop(complete: boolean): void;
}

/** What a bar counts: pages of items (pull, reconcile), batches of changes (push), tables of rows (directory). */
export interface ProgressUnits {
  step: string;
  item: string;
}

export function progressReporter(
  ctx: Pick<AppContext, 'io' | 'logger'>,
  job: string,
  units: ProgressUnits = { step: 'pages', item: 'items' },
): ProgressReporter {
  const started = Date.now();
  const rate = (n: number) => Math.round(n / Math.max(0.001, (Date.now() - started) / 1000));
  if (!ctx.io.isTTY) return logLines(ctx, job, rate);
  return terminalBar(job, units, started, rate);
}

function terminalBar(job: string, units: ProgressUnits, started: number, rate: (n: number) => number): ProgressReporter {
  let bar: SingleBar | undefined;
  let firstItems = 0;
  let firstPage = 0;
  let note = '';
  const eta = (page: number, total: number): string => {
    const done = page - firstPage;
    return done > 0 ? duration(((Date.now() - started) / done) * Math.max(0, total - page)) : '…';
  };
  return {
    onPage(p) {
      if (!bar) {
        bar = newBar(p.list, job, units);
        // A resumed run starts where its checkpoint was: the bar too.
        firstPage = p.page - 1;
        bar.start(p.pageCount, firstPage, { items: humanNumber(0), rate: humanNumber(0), eta: '…', note });
        firstItems = p.itemsSoFar - p.items;
      }
      bar.setTotal(p.pageCount);
      const items = p.itemsSoFar - firstItems;
      bar.update(p.page, { items: humanNumber(p.itemsSoFar), rate: humanNumber(rate(items)), eta: eta(p.page, p.pageCount), note });
    },
    watch(run) {
      return withRequestTrace((e) => {
        const next = retryNote(e);
        if (next === note) return;
        note = next;
        bar?.update({ note });
        // A retry is drawn as it happens: an answer in flight may clear it before the next timed redraw.
        if (next && bar?.isActive) bar.render();
      }, run);
    },
    stop(complete) {
      if (!bar) return;
      if (complete) bar.update(bar.getTotal(), { eta: '0s', note: '' });
      bar.stop();
      lineEnded();
    },
  };
}

/** What the bar says about the request just answered: a retry while they last, nothing once one succeeds. */
function retryNote(e: TracedRequest): string {
  if (e.outcome === 'ok') return '';
  const why = e.httpStatus === undefined ? 'no answer' : `HTTP ${e.httpStatus}`;
  if (e.outcome === 'error') return ` | failed: ${why}`;
  return ` | retrying: ${why}, retry ${e.attempt + 1}`;
}

function newBar(list: string, job: string, units: ProgressUnits): SingleBar {
  return new SingleBar(
    {
      format: `${list} ${job} [{bar}] {value}/{total} ${units.step}{note} | {items} ${units.item} | {rate} ${units.item}/s | ETA {eta}`,
      barsize: 24,
      hideCursor: true,
      // listsync handles SIGINT/SIGTERM itself and stops the bar on its way out.
      gracefulExit: false,
      stream: barStream(),
    },
    Presets.shades_classic,
  );
}

/** stderr as the bar writes to it: a draw that leaves its line open is ended by the next line anything else writes. */
function barStream(): NodeJS.WriteStream {
  const stderr = process.stderr;
  const stream = Object.create(stderr) as NodeJS.WriteStream;
  stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (text.endsWith('\n')) lineEnded();
    else if (text.length) lineLeftOpen(() => stderr.write('\n'));
    return stderr.write(chunk, ...rest);
  }) as NodeJS.WriteStream['write'];
  return stream;
}

function logLines(ctx: Pick<AppContext, 'logger'>, job: string, rate: (n: number) => number): ProgressReporter {
  let log: AppContext['logger'] | undefined;
  return {
    onPage(p) {
      log ??= ctx.logger.child({ list: p.list, job, runId: p.runId });
      log.info(
        {
          page: p.page,
          pageCount: p.pageCount,
          items: p.items,
          itemsSoFar: p.itemsSoFar,
          totalCount: p.totalCount,
          itemsPerSecond: rate(p.itemsSoFar),
        },
        'page',
      );
    },
    watch: (run) => run(),
    stop: () => undefined,
  };
}
