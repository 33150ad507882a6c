/**
 * What the garbage collector did while a benchmark ran, from the engine's own
 * `gc` performance entries: full collections forced by listsync (the heap
 * budget's `gc()`, flagged "forced"), the engine's own full and young
 * collections, and the time they held the main thread. Entries arrive after
 * the fact; `stop` takes the ones still pending, so none is missed.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface GcFigures {
  /** Full collections listsync asked for (the heap budget). */
  forced: number;
  /** Full collections the engine decided on itself. */
  major: number;
  /** Young-generation collections (scavenges). */
  minor: number;
  /** Main-thread pause of all of them, in ms. */
  pauseMs: number;
}

export function watchGc(): { stop(): GcFigures } {
  const figures: GcFigures = { forced: 0, major: 0, minor: 0, pauseMs: 0 };
  const count = (entries: PerformanceEntry[]): void => {
    for (const e of entries) tally(figures, e);
  };
  const observer = new PerformanceObserver((list) => count(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop(): GcFigures {
      count(observer.takeRecords());
      observer.disconnect();
      return figures;
    },
  };
}

function tally(figures: GcFigures, entry: PerformanceEntry): void {
  const detail = (entry as PerformanceEntry & { detail?: { kind: number; flags: number } }).detail;
  if (!detail) return;
  figures.pauseMs += entry.duration;
  if (detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) figures.minor++;
  else if (detail.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) return;
  else if (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) figures.forced++;
  else figures.major++;
}
