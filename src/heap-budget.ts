/**
 * A ceiling on the JS heap a long read may leave in use between pages.
 *
 * What a read holds at once is bounded by design (pages asked for ahead,
 * parsed pages waiting, pages being written), but what it has let go of is
 * freed when V8 decides to collect, and V8 lets the old generation grow to
 * several times what is live while pages go by fast: the same backfill
 * peaked anywhere from ~270 to ~500 MB. So between pages the heap in use is
 * checked (`v8.getHeapStatistics`, no allocation), and above the budget one
 * full collection runs (~20-60 ms for what a pull keeps live; at most one
 * every few dozen pages).
 *
 * When what is live is itself above the budget, the ceiling moves to 1.5x
 * what the collection left, so a collection never runs page after page.
 * Without a way to collect (the `--expose-gc` flag refused), it does nothing.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/** The budget of every client's paged reads: what a pull keeps live is ~15-35 MB above a ~25 MB process. */
export const HEAP_BUDGET_BYTES = 80 * 1024 * 1024;

let collect: (() => void) | null | undefined;

/** The engine's full collection, made available at run time; null when refused. */
function collector(): (() => void) | null {
  if (collect === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc = vm.runInNewContext('gc') as unknown;
      collect = typeof gc === 'function' ? (gc as () => void) : null;
    } catch {
      collect = null;
    }
  }
  return collect;
}

export class HeapBudget {
  private ceiling: number;
  /** Full collections run so far. */
  collections = 0;

  /** `bytes`: 0 turns the budget off. */
  constructor(private readonly bytes: number) {
    this.ceiling = bytes;
  }

  /** Between pages: one full collection when the heap in use is above the ceiling. */
  check(): void {
    if (this.bytes <= 0 || v8.getHeapStatistics().used_heap_size <= this.ceiling) return;
    const gc = collector();
    if (!gc) return;
    gc();
    this.collections++;
    this.ceiling = Math.max(this.bytes, Math.round(v8.getHeapStatistics().used_heap_size * 1.5));
  }
}
