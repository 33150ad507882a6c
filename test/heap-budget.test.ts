/** The heap budget between pages: one full collection when the heap in use passes it, never one page after page. */
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { HeapBudget } from '../src/heap-budget.js';

const used = (): number => v8.getHeapStatistics().used_heap_size;
const MB = 1024 * 1024;

describe('HeapBudget', () => {
  it('collects once when garbage takes the heap past the budget, and the heap in use drops', () => {
    const budget = new HeapBudget(used() + 20 * MB);
    budget.check();
    expect(budget.collections).toBe(0);
    let garbage: object[] | null = Array.from({ length: 600_000 }, (_, i) => ({ i, s: `item ${i}` }));
    expect(garbage.length).toBe(600_000);
    garbage = null;
    const before = used();
    budget.check();
    expect(budget.collections).toBe(1);
    expect(used()).toBeLessThan(before - 10 * MB);
  });

  it('when what is live is above the budget, the ceiling moves: no collection on every page', () => {
    const live = Array.from({ length: 300_000 }, (_, i) => ({ i, s: `live ${i}` }));
    const budget = new HeapBudget(1 * MB);
    budget.check();
    expect(budget.collections).toBe(1);
    for (let page = 0; page < 20; page++) budget.check();
    expect(budget.collections).toBe(1);
    expect(live).toHaveLength(300_000);
  });

  it('0 turns it off', () => {
    const budget = new HeapBudget(0);
    budget.check();
    expect(budget.collections).toBe(0);
  });
});
