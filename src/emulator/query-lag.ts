import type { ListData } from './store.js';

/**
 * Query lag: the real platform's query index may trail its writes, so an item
 * just created, changed or deleted can show its old state in `items/query`
 * for a while. With a lag of L ms, a write made at T shows in queries from
 * T + L on (on the emulator's clock, so a test can move time with the admin
 * clock instead of sleeping). Until then queries see the item as it was
 * before: a created item is absent, a changed or deleted one shows its
 * earlier copy. Reads by ID (`GET .../items/{id}`) and the admin export show
 * the truth at once.
 *
 * The earlier copy is a "ghost" slot of the list (same ListDataID, never in
 * `order`), so the query engine filters, sorts and writes it like any item.
 * Several writes to one item inside the lag keep the oldest copy and move
 * the moment it shows to the last write's time + L.
 */

interface PendingWrite {
  /** The slot queries show instead of the live one, or null: the item is hidden (created inside the lag). */
  ghost: number | null;
  /** The live slot, or null once the item is deleted. */
  live: number | null;
  visibleAtMs: number;
}

export interface QueryView {
  /** Slots a query scans, in ascending ListDataID order. */
  order: readonly number[];
  /** Changes whenever the view does (with the list's mutation counter), for query caches. */
  epoch: string;
}

export class QueryLag {
  private lag = 0;
  private readonly nowMs: () => number;
  private readonly pending = new WeakMap<ListData, Map<bigint, PendingWrite>>();
  private viewCounter = 0;
  /** The last view built per list: pages of one query reuse it while nothing changes. */
  private readonly views = new WeakMap<ListData, QueryView>();

  constructor(nowMs: () => number, lagMs = 0) {
    this.nowMs = nowMs;
    this.lagMs = lagMs;
  }

  get lagMs(): number {
    return this.lag;
  }

  set lagMs(ms: number) {
    if (!Number.isInteger(ms) || ms < 0) throw new RangeError(`queryLagMs: must be a whole number of milliseconds >= 0 (got ${ms})`);
    this.lag = ms;
  }

  /** Call after creating the item in `slot`. */
  created(list: ListData, slot: number): void {
    if (this.lag === 0) return;
    const id = list.ids[slot] as bigint;
    this.entries(list).set(id, { ghost: null, live: slot, visibleAtMs: this.nowMs() + this.lag });
    this.viewCounter++;
  }

  /** Call before changing the item in `slot` (the copy taken is what queries keep showing). */
  beforeChange(list: ListData, slot: number): void {
    this.before(list, slot, slot);
  }

  /** Call before deleting the item in `slot`. */
  beforeDelete(list: ListData, slot: number): void {
    this.before(list, slot, null);
  }

  private before(list: ListData, slot: number, live: number | null): void {
    if (this.lag === 0) return;
    const id = list.ids[slot] as bigint;
    const entries = this.entries(list);
    const existing = entries.get(id);
    const visibleAtMs = this.nowMs() + this.lag;
    if (existing !== undefined && existing.visibleAtMs > this.nowMs()) {
      existing.live = live;
      existing.visibleAtMs = visibleAtMs;
    } else {
      entries.set(id, { ghost: list.copyToGhost(slot), live, visibleAtMs });
    }
    this.viewCounter++;
  }

  /** The slots queries see now. */
  view(list: ListData): QueryView {
    const entries = this.pending.get(list);
    if (entries !== undefined) this.expire(entries);
    if (entries === undefined || entries.size === 0) return { order: list.order, epoch: `${list.mutation}` };
    const epoch = `${list.mutation}/${this.viewCounter}`;
    const last = this.views.get(list);
    if (last !== undefined && last.epoch === epoch) return last;
    const replace = new Map<number, number | null>();
    const deletedGhosts: number[] = [];
    for (const p of entries.values()) {
      if (p.live !== null) replace.set(p.live, p.ghost);
      else if (p.ghost !== null) deletedGhosts.push(p.ghost);
    }
    const ids = list.ids;
    deletedGhosts.sort((a, b) => ((ids[a] as bigint) < (ids[b] as bigint) ? -1 : 1));
    const order: number[] = [];
    let g = 0;
    for (const slot of list.order) {
      const id = ids[slot] as bigint;
      while (g < deletedGhosts.length && (ids[deletedGhosts[g] as number] as bigint) < id) order.push(deletedGhosts[g++] as number);
      const shown = replace.has(slot) ? replace.get(slot) : slot;
      if (shown !== null && shown !== undefined) order.push(shown);
    }
    while (g < deletedGhosts.length) order.push(deletedGhosts[g++] as number);
    const view = { order, epoch };
    this.views.set(list, view);
    return view;
  }

  /** Writes still hidden from queries, for the admin API. */
  pendingCount(list: ListData): number {
    const entries = this.pending.get(list);
    if (entries === undefined) return 0;
    this.expire(entries);
    return entries.size;
  }

  private expire(entries: Map<bigint, PendingWrite>): void {
    const now = this.nowMs();
    for (const [id, p] of entries) {
      if (p.visibleAtMs <= now) {
        entries.delete(id);
        this.viewCounter++;
      }
    }
  }

  private entries(list: ListData): Map<bigint, PendingWrite> {
    let m = this.pending.get(list);
    if (m === undefined) {
      m = new Map();
      this.pending.set(list, m);
    }
    return m;
  }
}
