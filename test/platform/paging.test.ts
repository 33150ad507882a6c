/**
 * The paging generator alone (ordering, read-ahead window, backpressure,
 * changing TotalCount), driven by an in-memory fetcher. The client's paging
 * over real HTTP is covered in client.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { PlatformError, ValidationError } from '../../src/platform/platform-errors.js';
import { type PageResult, SOURCE_AHEAD_MS, paginate } from '../../src/platform/paging.js';

interface Deferred {
  index: number;
  /** Answered by the test (resolve called). */
  settled: boolean;
  resolve: (r: PageResult<number>) => void;
  reject: (e: unknown) => void;
}

function controllableFetcher() {
  const calls: Deferred[] = [];
  const fetch = (index: number) =>
    new Promise<PageResult<number>>((resolve, reject) => {
      const call: Deferred = {
        index,
        settled: false,
        resolve: (v) => {
          call.settled = true;
          resolve(v);
        },
        reject,
      };
      calls.push(call);
    });
  return { calls, fetch };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('paginate', () => {
  it('a start page asked for already is used once, not asked again; a page that fails its check is asked again', async () => {
    const { calls, fetch } = controllableFetcher();
    const firstPage = Promise.resolve<PageResult<number>>({ items: [1, 1], totalCount: 20 });
    let checked = 0;
    const gen = paginate<number>(fetch, {
      pageSize: 2,
      window: 2,
      expectedTotal: 4,
      firstPage,
      verify: () => (checked++ === 0 ? 'bad' : null),
    });
    const first = gen.next();
    await tick();
    // Page 2 fanned out from the expected total; page 1 not fetched: its answer was handed in.
    expect(calls.map((c) => c.index)).toEqual([2, 1]);
    calls[1]!.resolve({ items: [7, 8], totalCount: 4 }); // the re-ask after the failed check
    expect((await first).value).toMatchObject({ index: 1, items: [7, 8] });
    await gen.return(undefined);
  });

  it('fetches the first page alone, then keeps `window` pages ahead, yielding in order', async () => {
    const { calls, fetch } = controllableFetcher();
    let now = 0;
    const gen = paginate<number>(fetch, { pageSize: 10, window: 3, now: () => now });
    const first = gen.next();
    await tick();
    expect(calls.map((c) => c.index)).toEqual([1]);
    calls[0]!.resolve({ items: [1], totalCount: 55 }); // 6 pages
    const p1 = await first;
    expect(p1.value).toEqual({ index: 1, pageCount: 6, totalCount: 55, items: [1] });
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4]);

    // Consumer is slow: nothing more is fetched until it asks for the next page.
    calls[2]!.resolve({ items: [3], totalCount: 55 });
    calls[3]!.resolve({ items: [4], totalCount: 55 });
    await tick();
    expect(calls).toHaveLength(4);

    const second = gen.next();
    await tick();
    calls[1]!.resolve({ items: [2], totalCount: 55 });
    expect((await second).value).toMatchObject({ index: 2, items: [2] });
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4, 5]);
    now += SOURCE_AHEAD_MS; // the consumer took its time over page 2
    expect((await gen.next()).value).toMatchObject({ index: 3, items: [3] });
    expect((await gen.next()).value).toMatchObject({ index: 4, items: [4] });
    // Pages 3 and 4 waited answered for the consumer: the source is ahead, fewer pages are kept ahead.
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4, 5]);
    const fifth = gen.next();
    await tick();
    calls[4]!.resolve({ items: [5], totalCount: 55 });
    expect((await fifth).value).toMatchObject({ index: 5 });
    // The consumer waited for page 5: one more page ahead again.
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4, 5, 6]);
    calls[5]!.resolve({ items: [6], totalCount: 55 });
    expect((await gen.next()).value).toMatchObject({ index: 6, pageCount: 6 });
    expect((await gen.next()).done).toBe(true);
  });

  it('follows a TotalCount that grows or shrinks while paging', async () => {
    const totals = [25, 25, 45, 45, 45];
    const pages: number[] = [];
    for await (const page of paginate<number>(async (i) => ({ items: [i], totalCount: totals[i - 1] ?? 45 }), { pageSize: 10, window: 2 }))
      pages.push(page.index);
    expect(pages).toEqual([1, 2, 3, 4, 5]);

    const shrinking = [50, 50, 20];
    const seen: number[] = [];
    for await (const page of paginate<number>(async (i) => ({ items: [i], totalCount: shrinking[i - 1] ?? 20 }), {
      pageSize: 10,
      window: 4,
    }))
      seen.push(page.index);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('starts at startPage and stops on an empty list', async () => {
    const seen: number[] = [];
    for await (const p of paginate<number>(async (i) => ({ items: [i], totalCount: 50 }), { pageSize: 10, window: 2, startPage: 4 }))
      seen.push(p.index);
    expect(seen).toEqual([4, 5]);
    const empty = [];
    for await (const p of paginate<number>(async () => ({ items: [], totalCount: 0 }), { pageSize: 10, window: 2 })) empty.push(p);
    expect(empty).toEqual([{ index: 1, pageCount: 0, totalCount: 0, items: [] }]);
  });

  it('goes on until a short page when there is no TotalCount', async () => {
    const seen: number[] = [];
    for await (const p of paginate<number>(async (i) => ({ items: i < 3 ? [1, 2] : [1], totalCount: undefined }), {
      pageSize: 2,
      window: 3,
    }))
      seen.push(p.index);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('refetches a page that is empty inside TotalCount, then fails rather than skip', async () => {
    let attempts = 0;
    const retried: number[] = [];
    const seen: number[] = [];
    for await (const p of paginate<number>(
      async (i) => (i === 2 && attempts++ < 1 ? { items: [], totalCount: 30 } : { items: [i], totalCount: 30 }),
      {
        pageSize: 10,
        window: 1,
        onEmptyPageRetry: (i) => retried.push(i),
      },
    ))
      seen.push(p.index);
    expect(seen).toEqual([1, 2, 3]);
    expect(retried).toEqual([2]);

    const run = async () => {
      for await (const _p of paginate<number>(async (i) => (i === 2 ? { items: [], totalCount: 30 } : { items: [i], totalCount: 30 }), {
        pageSize: 10,
        window: 1,
      }));
    };
    await expect(run()).rejects.toThrow(PlatformError);
    await expect(run()).rejects.toThrow(/page 2 came back empty 3 times/);
  });

  it('rejects a page size over 1000 before fetching', async () => {
    let calls = 0;
    const gen = paginate<number>(
      async () => {
        calls++;
        return { items: [], totalCount: 0 };
      },
      { pageSize: 1001, window: 2 },
    );
    await expect(gen.next()).rejects.toThrow(ValidationError);
    expect(calls).toBe(0);
  });

  it('aborts what is in flight when the consumer stops early or the signal fires', async () => {
    const signals: AbortSignal[] = [];
    const fetch = (i: number, _s: number, signal: AbortSignal) => {
      signals.push(signal);
      return i === 1 ? Promise.resolve({ items: [1], totalCount: 100 }) : new Promise<PageResult<number>>(() => undefined);
    };
    for await (const p of paginate<number>(fetch, { pageSize: 10, window: 3 })) {
      expect(p.index).toBe(1);
      break;
    }
    expect(signals.every((s) => s.aborted)).toBe(true);

    const ac = new AbortController();
    const gen = paginate<number>(fetch, { pageSize: 10, window: 3, signal: ac.signal });
    await gen.next();
    const next = gen.next();
    ac.abort(new Error('stop now'));
    await expect(next).rejects.toThrow('stop now');
    expect(signals.at(-1)!.aborted).toBe(true);
  });

  it('fills the window from the start when a probe already told TotalCount', async () => {
    const { calls, fetch } = controllableFetcher();
    const gen = paginate<number>(fetch, { pageSize: 10, window: 3, expectedTotal: 25 });
    const first = gen.next();
    await tick();
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3]); // 3 pages hold 25 items: not a 4th
    for (const c of calls) c.resolve({ items: [c.index], totalCount: 25 });
    expect((await first).value).toMatchObject({ index: 1, pageCount: 3 });
    expect((await gen.next()).value).toMatchObject({ index: 2 });
    expect((await gen.next()).value).toMatchObject({ index: 3 });
    expect((await gen.next()).done).toBe(true);
    expect(calls).toHaveLength(3);
  });

  it('a source faster than the consumer: one page waits answered, not the window; a slower one: the whole window is asked for', async () => {
    const asked: number[] = [];
    const answered = new Set<number>();
    // Every page is answered at once: after the first few, the consumer never waits.
    const fast = (i: number) => {
      asked.push(i);
      answered.add(i);
      return Promise.resolve({ items: [i], totalCount: 1000 });
    };
    let waitingMost = 0;
    let now = 0;
    for await (const page of paginate<number>(fast, { pageSize: 10, window: 8, expectedTotal: 1000, now: () => now })) {
      const waiting = asked.filter((i) => i > page.index && answered.has(i)).length;
      if (page.index > 10) waitingMost = Math.max(waitingMost, waiting);
      now += 100; // each page takes the consumer 100 ms
    }
    expect(asked).toHaveLength(100);
    expect(waitingMost).toBe(1);

    // Every page takes a while: the consumer always waits, so the window stays full.
    const { calls, fetch } = controllableFetcher();
    const gen = paginate<number>(fetch, { pageSize: 10, window: 8, expectedTotal: 1000 });
    for (let i = 1; i <= 20; i++) {
      const next = gen.next();
      await tick();
      expect(calls.length).toBeGreaterThanOrEqual(Math.min(100, i - 1 + 8));
      calls[i - 1]!.resolve({ items: [i], totalCount: 1000 });
      expect((await next).value).toMatchObject({ index: i });
    }
    void gen.return(undefined);
  });

  it('pages answered together and taken a moment later (a rate limiter letting a clump go) keep the whole window asked', async () => {
    const { calls, fetch } = controllableFetcher();
    const now = 0; // the consumer takes every page at once: no page waits SOURCE_AHEAD_MS
    const gen = paginate<number>(fetch, { pageSize: 10, window: 6, expectedTotal: 1000, now: () => now });
    let next = 1;
    for (let clump = 0; clump < 5; clump++) {
      const first = gen.next();
      await tick();
      // Everything asked so far comes back together; the consumer then takes them one by one.
      const open = calls.filter((c) => !c.settled);
      for (const c of open) c.resolve({ items: [c.index], totalCount: 1000 });
      expect((await first).value).toMatchObject({ index: next++ });
      for (let k = 1; k < open.length; k++) expect((await gen.next()).value).toMatchObject({ index: next++ });
      await tick();
      expect(calls.filter((c) => !c.settled)).toHaveLength(6);
    }
    void gen.return(undefined);
  });

  it('keeps fewer pages ahead when pages are big (maxBytesAhead), never fewer than one', async () => {
    const { calls, fetch } = controllableFetcher();
    const gen = paginate<number>(fetch, { pageSize: 10, window: 8, maxBytesAhead: 3_000_000 });
    const first = gen.next();
    await tick();
    calls[0]!.resolve({ items: [1], totalCount: 200, bytes: 1_000_000 });
    await first;
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4]); // 3 MB ahead of 1 MB pages
    calls[1]!.resolve({ items: [2], totalCount: 200, bytes: 10_000_000 });
    await gen.next();
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4]); // a 10 MB page: one page ahead, and 3 is in flight already
    calls[2]!.resolve({ items: [3], totalCount: 200, bytes: 100 });
    await gen.next();
    expect(calls.map((c) => c.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]); // small again: the whole window
    void gen.return(undefined);
  });

  it('asks past a full last page only when confirmEnd says the page may not be the end', async () => {
    const full = (i: number) => Promise.resolve({ items: Array.from({ length: 10 }, (_v, k) => i * 10 + k), totalCount: 20 });
    const asked = async (confirmEnd: (r: PageResult<number>) => boolean): Promise<number[]> => {
      const indexes: number[] = [];
      const fetch = (i: number) => {
        indexes.push(i);
        return i <= 2 ? full(i) : Promise.resolve({ items: [], totalCount: 20 });
      };
      for await (const _page of paginate<number>(fetch, { pageSize: 10, window: 1, confirmEnd })) void _page;
      return indexes;
    };
    // The last page reaches the item known to be last when the read started: nothing to look for.
    expect(await asked((r) => r.items.at(-1)! < 29)).toEqual([1, 2]);
    // It stops short of it: TotalCount may be too low, the page after it is asked for.
    expect(await asked((r) => r.items.at(-1)! < 35)).toEqual([1, 2, 3]);
  });
});
