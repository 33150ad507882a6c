/**
 * Progress of a long command, one way for every job: on a terminal a bar on stderr
 * (`orders pull [====    ] 12/200 pages | 11,900 items | 2,310 items/s | ETA 1m20s`, numbers for
 * people), else one `page` log line per page with the shape of every other line (level, time,
 * name, list, job, runId; plain numbers), at info level.
 */
import { SingleBar, Presets } from 'cli-progress';
import type { AppContext } from '../context.js';
import { humanNumber } from '../format.js';
import type { PageDone } from '../sync/run-job.js';

export interface ProgressReporter {
  onPage(p: PageDone): void;
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
  let bar: SingleBar | undefined;
  let firstItems = 0;
  return {
    onPage(p) {
      if (!bar) {
        bar = new SingleBar(
          {
            format: `${p.list} ${job} [{bar}] {value}/{total} ${units.step} | {items} ${units.item} | {rate} ${units.item}/s | ETA {eta_formatted}`,
            hideCursor: true,
            etaBuffer: 20,
            // listsync handles SIGINT/SIGTERM itself and stops the bar on its way out.
            gracefulExit: false,
          },
          Presets.shades_classic,
        );
        // A resumed run starts where its checkpoint was: the bar too.
        bar.start(p.pageCount, p.page - 1, { items: humanNumber(0), rate: humanNumber(0) });
        firstItems = p.itemsSoFar - p.items;
      }
      bar.setTotal(p.pageCount);
      const items = p.itemsSoFar - firstItems;
      bar.update(p.page, { items: humanNumber(p.itemsSoFar), rate: humanNumber(rate(items)) });
    },
    stop(complete) {
      if (!bar) return;
      if (complete) bar.update(bar.getTotal());
      bar.stop();
    },
  };
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
    stop: () => undefined,
  };
}
