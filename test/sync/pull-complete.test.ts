/**
 * The pull's reads are checked before they are believed, its cursor costs what
 * changed, and a run killed anywhere resumes incrementally. Real Postgres, the
 * emulator over HTTP, the emulator's malformed answers switched on by the admin API.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import type { PageFault } from '../../src/emulator/faults.js';
import { pullList } from '../../src/sync/pull.js';
import { readState } from '../../src/store/state.js';
import { BIN, childEnv, runCli } from '../helpers/cli.js';
import { runNightlyJob } from '../helpers/busy-list.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const queryRequests = async (world: World) => (await world.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query'));
const lastRun = async (world: World) =>
  (await world.t.db('listsync.sync_runs').orderBy('id', 'desc').first()) as {
    status: string;
    error: string | null;
    details: Record<string, unknown>;
  };

describe('malformed answers: the run ends by itself, keeps its marks, and the next pull heals', () => {
  const cases: { fault: PageFault; check: RegExp; page: number }[] = [
    { fault: { kind: 'shortPage', page: 2 }, check: /short page/, page: 2 },
    { fault: { kind: 'lowTotal', count: 1 }, check: /TotalCount \d+ is lower than the items served/, page: 4 },
    { fault: { kind: 'lowTotal', count: 50 }, check: /TotalCount is lower than the items served/, page: 4 },
    { fault: { kind: 'duplicate', page: 3 }, check: /already served on an earlier page/, page: 3 },
    { fault: { kind: 'ignorePageIndex' }, check: /equals the previous one/, page: 2 },
    { fault: { kind: 'ignorePageIndexNoTotal' }, check: /no TotalCount/, page: 1 },
    { fault: { kind: 'nullData' }, check: /no TotalCount/, page: 1 },
    { fault: { kind: 'missingId', page: 2 }, check: /without ListDataID/, page: 2 },
  ];
  for (const { fault, check, page } of cases) {
    it(`${fault.kind}${fault.count ? ` by ${fault.count}` : ''}: fails naming the check and page ${page}`, async () => {
      w = await startWorld({ emulator: { items: 350 }, list: { pageSize: 100 } });
      const list = w.config.lists[0]!;
      // A mirror already loaded, then its marks cleared: the faulty run is a full read over several pages, and its marks must stay unset.
      await pullList(w.deps(), list);
      const before = await readState(w.t.db, 'orders', 'pull');
      await w.t.db('listsync.sync_state').where({ list_name: 'orders', job: 'pull' }).update({ watermark: null, high_water: null });
      await w.emu.admin.setFaults({ pageFault: fault, faultPaths: 'items/query' });
      const err = await pullList(w.deps(), list).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(check);
      expect(err?.message).toMatch(new RegExp(`page ${page}\\b`));
      const after = await readState(w.t.db, 'orders', 'pull');
      expect(after.watermark).toBeNull();
      expect(after.highWater).toBeNull();
      expect((await lastRun(w)).status).toBe('failed');
      expect((await lastRun(w)).error).toMatch(check);

      await w.emu.admin.clearFaults();
      const healed = await pullList(w.deps(), list);
      expect(healed.status).toBe('succeeded');
      expect(healed.watermark).toBe(before.watermark);
      await expectMirrorEqualsPlatform(w);
    });
  }

  it('an answer with an unknown non-zero Status is retried, and the read goes on', async () => {
    w = await startWorld({ emulator: { items: 350 }, list: { pageSize: 100 } });
    await w.emu.admin.setFaults({ pageFault: { kind: 'unknownStatus' }, faultPaths: 'items/query' });
    const r = await pullList(w.deps(), w.config.lists[0]!);
    expect(r.status).toBe('succeeded');
    expect(r.counters.retries).toBeGreaterThanOrEqual(1);
    expect((await queryRequests(w)).some((e) => e.fault === 'unknownStatus')).toBe(true);
    await expectMirrorEqualsPlatform(w);
  });

  it('a server ignoring PageIndex without TotalCount cannot make a pull loop', async () => {
    w = await startWorld({ emulator: { items: 350 }, list: { pageSize: 100 } });
    await w.emu.admin.setFaults({ pageFault: { kind: 'ignorePageIndexNoTotal' }, faultPaths: 'items/query' });
    await expect(pullList(w.deps(), w.config.lists[0]!)).rejects.toThrow(/no TotalCount/);
    expect((await queryRequests(w)).length).toBeLessThan(10);
  });
});

describe('the time-precise cursor', () => {
  it('a busy list: after the full load and 50 edits, a pull asks at most 3 queries beyond the page of changes, and the mirror equals the platform', async () => {
    w = await startWorld({ emulator: { items: 30_000 } });
    const list = w.config.lists[0]!;
    // The nightly job: 33,000 random edits (about 20,000 items) over the two hours before now.
    await runNightlyJob(w.emu.admin, { appID: 'demo', listID: 'orders', edits: 33_000, hours: 2 });
    const full = await pullList(w.deps(), list);
    expect(full.counters.rows_inserted).toBe(30_000);

    const items = (await w.emu.admin.exportList('demo', 'orders')).items;
    for (let i = 0; i < 50; i++)
      await w.emu.admin.editItem('demo', 'orders', String(items[i * 500]!.ListDataID), { Data: { [F.customer]: `edit ${i}` } });
    await w.emu.admin.clearRequests();
    const r = await pullList(w.deps(), list);
    expect(r.order).toBe('newest-first');
    // The changes' page, and at most 3 requests beyond it (issue 26): a second page and the follow-up after a read of more than one.
    expect((await queryRequests(w)).length).toBeLessThanOrEqual(4);
    expect(r.counters.rows_updated).toBe(50);
    await expectMirrorEqualsPlatform(w);
  }, 120_000);

  it('items modified within the overlap before the mark, and with the platform clock minutes behind, are not missed', async () => {
    w = await startWorld({ emulator: { items: 500 }, list: { overlapMinutes: 10 } });
    const list = w.config.lists[0]!;
    const first = await pullList(w.deps(), list);
    const mark = new Date(`${first.highWater!.replace(' ', 'T')}Z`);
    const ids = (await w.emu.admin.exportList('demo', 'orders')).items.map((it) => String(it.ListDataID));
    // A write stamped 4 minutes before the mark (a lagging platform clock), and one at the mark itself.
    await w.emu.admin.setClock(new Date(mark.getTime() - 4 * 60_000));
    await w.emu.admin.editItem('demo', 'orders', ids[3]!, { Data: { [F.customer]: 'behind' } });
    await w.emu.admin.setClock(mark);
    await w.emu.admin.editItem('demo', 'orders', ids[4]!, { Data: { [F.customer]: 'at the mark' } });
    await w.emu.admin.setClock(null);
    const r = await pullList(w.deps(), list);
    expect(r.order).toBe('newest-first');
    expect(r.counters.rows_updated).toBe(2);
    await expectMirrorEqualsPlatform(w);
  });

  it('a cursor field the platform refuses to sort by: the run reads the date window by Created and says so', async () => {
    w = await startWorld({ emulator: { items: 300 }, list: { cursorField: 'Modified' } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    // A cursor value that does not parse makes newest-first untrustworthy.
    const id = String((await w.emu.admin.exportList('demo', 'orders')).items[0]!.ListDataID);
    await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.customer]: 'x' } });
    const r = await pullList(w.deps(), { ...list, cursorField: 'Title' });
    expect(r.order).toBe('by-created');
    expect(r.fallback).toMatch(/not a date-time|refused to sort/);
    expect((await lastRun(w)).details.fallback).toMatch(/not a date-time|refused to sort/);
    expect(w.logs.join('')).toMatch(/reading the date window by the immutable sort field/);
  });

  it('edits, creates and deletes while an incremental pull pages: after that pull and one more, the mirror equals the platform', async () => {
    w = await startWorld({
      emulator: { items: 3000, faults: { latencyMs: 30 } },
      list: { pageSize: 100, overlapMinutes: 0 },
      platform: { maxInFlight: 4 },
      database: { pageWriters: 2 },
    });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    // Touch most of the list, so the next incremental read spans many pages.
    await w.emu.admin.setActivity({ appID: 'demo', listID: 'orders', editsPerSecond: 5000 });
    for (let i = 0; i < 100 && (await w.emu.admin.activity()).totals.edits < 2500; i++) await new Promise((r) => setTimeout(r, 50));
    await w.emu.admin.setActivity({ appID: 'demo', listID: 'orders', editsPerSecond: 60, createsPerSecond: 15, deletesPerSecond: 15 });
    const during = await pullList(w.deps(), list);
    await w.emu.admin.setActivity(null);
    expect(during.status).toBe('succeeded');
    expect(during.counters.pages).toBeGreaterThan(3);
    await pullList(w.deps(), list);
    await expectMirrorEqualsPlatform(w, 'orders', 'demo', 'orders', { allowExtraRows: true });
  });
});

describe('resume stays incremental', () => {
  for (const killAt of [1, 3, 9, 26]) {
    it(`a full load killed at page ${killAt} resumes, moves the watermark, and the next pull reads at most 2 pages`, async () => {
      w = await startWorld({
        emulator: { items: 3000, faults: { latencyMs: 120 } },
        list: { pageSize: 100 },
        platform: { requestsPerSecond: 20, maxInFlight: 2 },
      });
      const env = { PLATFORM_API_KEY: w.emu.apiKey };
      const child = spawn(process.execPath, [BIN, '--config', w.configFile, 'pull'], { env: childEnv(env), stdio: 'ignore' });
      for (let i = 0; i < 600; i++) {
        if (killAt === 1) {
          if ((await queryRequests(w)).some((e) => e.pageIndex === 1)) break;
        } else if (((await readState<{ nextPage: number }>(w.t.db, 'orders', 'pull')).checkpoint?.nextPage ?? 0) >= killAt) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      expect((await readState(w.t.db, 'orders', 'pull')).watermark).toBeNull();

      const rerun = await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd });
      expect(rerun.code).toBe(0);
      expect(rerun.stdout).not.toMatch(/held/);
      const after = await readState(w.t.db, 'orders', 'pull');
      expect(after.watermark).not.toBeNull();
      expect(after.highWater).not.toBeNull();
      await expectMirrorEqualsPlatform(w);

      await w.emu.admin.clearRequests();
      const next = await runCli(['--config', w.configFile, 'pull'], { env, cwd: w.cwd });
      expect(next.code).toBe(0);
      expect((await queryRequests(w)).length).toBeLessThanOrEqual(2);
    }, 90_000);
  }
});

describe('what a first full load costs in requests', () => {
  it('fields, title and page 1 asked together; a page 1 that says the list is big brings the probes, then page 1 again and the rest fanned out, the follow-up with the last page, and no look past a last page that reaches the last item', async () => {
    // 100 ms per answer, 100 requests/s: requests asked before any answer came back were asked together.
    w = await startWorld({ emulator: { items: 400, faults: { latencyMs: 100 } }, list: { pageSize: 100 } });
    const checkpoints: unknown[] = [];
    const deps = { ...w.deps(), onPage: () => void checkpoints.push(readState(w!.t.db, 'orders', 'pull')) };
    const r = await pullList(deps, w.config.lists[0]!);
    expect(r.status).toBe('succeeded');
    expect(r.counters.rows_inserted).toBe(400);
    const log = await w.emu.admin.requests();
    const queries = log.filter((e) => e.path.endsWith('/items/query'));
    const body = (e: { body?: string | null }) => JSON.parse(e.body ?? '{}') as { PageSize: number; Filters?: unknown[] };
    const probes = queries.filter((e) => body(e).PageSize === 1);
    const pages = queries.filter((e) => body(e).PageSize === 100 && !body(e).Filters?.length);
    // The follow-up: newest first down to the run's start mark, one page on a quiet list.
    expect(queries.filter((e) => body(e).Filters?.length)).toHaveLength(1);
    expect(probes).toHaveLength(2);
    // Page 1 asked early (it said 400 items: more than a page), and again after the probes; 400 items end on a full page 4.
    expect(pages.map((e) => e.pageIndex).sort()).toEqual([1, 1, 2, 3, 4]);
    const fields = log.find((e) => e.route === 'GET /v1/lists/{appID}/{listID}/fields')!;
    const title = log.find((e) => e.route === 'GET /v1/lists/{appID}/{listID}')!;
    expect(log).toHaveLength(2 + 1 + 2 + 4 + 1); // fields, title, the early page 1, probes, pages, follow-up
    // Fields, title and page 1 all left before the first of them was answered.
    const [early, again] = pages.filter((e) => e.pageIndex === 1).sort((a, b) => a.startedAt - b.startedAt);
    const together = [fields, title, early!];
    const firstAnswer = Math.min(...together.map((e) => e.finishedAt!));
    for (const e of together) expect(e.startedAt).toBeLessThan(firstAnswer);
    // The probes left once the early page 1 was answered, and page 1 was read again after them.
    for (const p of probes) expect(p.startedAt).toBeGreaterThanOrEqual(early!.finishedAt!);
    expect(again!.startedAt).toBeGreaterThanOrEqual(Math.max(...probes.map((p) => p.finishedAt!)));
    // Pages 2..4 were fanned out at once, none waiting for another's answer: the probe's TotalCount said how many there are.
    const rest = pages.filter((e) => e.pageIndex !== 1);
    expect(Math.max(...rest.map((e) => e.startedAt))).toBeLessThan(Math.min(...rest.map((e) => e.finishedAt!)));
    // The follow-up was asked with the last page, not after it was answered: they leave in the same window.
    const followUp = queries.find((e) => body(e).Filters?.length)!;
    expect(followUp.startedAt).toBeLessThan(pages.find((e) => e.pageIndex === 4)!.finishedAt!);
    // Every page committed beside a checkpoint that already holds the probes' answers.
    const states = (await Promise.all(checkpoints)) as { checkpoint: { watch: { lastKeyAtStart?: unknown; firstTotal: number } } | null }[];
    expect(states.length).toBeGreaterThan(0);
    for (const s of states.filter((x) => x.checkpoint)) {
      expect(s.checkpoint!.watch.lastKeyAtStart).toBeDefined();
      expect(s.checkpoint!.watch.firstTotal).toBe(400);
    }
    await expectMirrorEqualsPlatform(w);
  });
});

describe('a pull of one list: the start probes leave with page 1', () => {
  type Query = { PageSize?: number; PageIndex?: number; Filters?: unknown[]; Sorts?: { Field: string }[] };
  const body = (e: { body?: string | null }) => JSON.parse(e.body ?? '{}') as Query;

  it('fields, title, page 1 and both probes go together; page 1 is believed, not asked again; pages 2..4 follow the probes', async () => {
    w = await startWorld({ emulator: { items: 400, faults: { latencyMs: 100 } }, list: { pageSize: 100 } });
    const r = await pullList({ ...w.deps(), startProbesEarly: true }, w.config.lists[0]!);
    expect(r.status).toBe('succeeded');
    expect(r.counters.rows_inserted).toBe(400);
    const log = await w.emu.admin.requests();
    const queries = log.filter((e) => e.path.endsWith('/items/query'));
    const probes = queries.filter((e) => body(e).PageSize === 1);
    const pages = queries.filter((e) => body(e).PageSize === 100 && !body(e).Filters?.length);
    expect(log).toHaveLength(2 + 1 + 2 + 3 + 1); // fields, title, page 1, probes, pages 2..4, follow-up
    expect(pages.map((e) => e.pageIndex).sort()).toEqual([1, 2, 3, 4]);
    const together = [...log.filter((e) => !e.path.endsWith('/items/query')), ...probes, pages.find((e) => e.pageIndex === 1)!];
    expect(together).toHaveLength(5);
    const firstAnswer = Math.min(...together.map((e) => e.finishedAt!));
    for (const e of together) expect(e.startedAt).toBeLessThan(firstAnswer);
    for (const p of pages.filter((e) => e.pageIndex !== 1))
      expect(p.startedAt).toBeGreaterThanOrEqual(Math.max(...probes.map((e) => e.finishedAt!)));
    await expectMirrorEqualsPlatform(w);
  });

  it('`listsync pull` of the one list configured does so: the probes leave before page 1 is answered, and page 1 is asked once', async () => {
    w = await startWorld({ emulator: { items: 400, faults: { latencyMs: 100 } }, list: { pageSize: 100 } });
    const r = await runCli(['--config', w.configFile, 'pull'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    expect(r.code).toBe(0);
    const queries = await queryRequests(w);
    const pageOne = queries.filter((e) => body(e).PageSize === 100 && !body(e).Filters?.length && e.pageIndex === 1);
    const probes = queries.filter((e) => body(e).PageSize === 1);
    expect(pageOne).toHaveLength(1);
    expect(probes).toHaveLength(2);
    for (const p of probes) expect(p.startedAt).toBeLessThan(pageOne[0]!.finishedAt!);
    await expectMirrorEqualsPlatform(w);
  });

  /** The run's client, with `before` run ahead of the start probes once page 1 has been answered. */
  function probeAfter(deps: ReturnType<World['deps']>, before: () => Promise<void>): ReturnType<World['deps']>['client'] {
    const client = deps.client;
    const cursor = deps.config.lists[0]!.cursorField;
    let pageOne: Promise<unknown> | undefined;
    let ran: Promise<void> | undefined;
    let done = false;
    return new Proxy(client, {
      get(target, prop, receiver) {
        if (prop === 'queryPageResult')
          return (appID: string, listID: string, query: Query, signal?: AbortSignal) => {
            const p = target.queryPageResult(appID, listID, query as never, signal);
            if (query.PageIndex === 1 && !query.Filters?.length) pageOne ??= p;
            return p;
          };
        if (prop === 'queryItems')
          return async (appID: string, listID: string, query: Query, signal?: AbortSignal) => {
            // Both probes wait for it; the newest-modification probe is the one that gives the mark.
            if (query.PageSize === 1 && !done) {
              if (query.Sorts?.[0]?.Field === cursor) done = true;
              ran ??= Promise.resolve(pageOne).then(before);
              await ran;
            }
            return target.queryItems(appID, listID, query as never, signal);
          };
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  it('an item of page 1 edited after page 1 was served and before the mark, in an earlier second than the mark: the follow-up reads it back', async () => {
    w = await startWorld({ emulator: { items: 400 }, list: { pageSize: 100 } });
    const world = w;
    const deps = world.deps();
    const [onPageOne] = (await world.emu.admin.exportList('demo', 'orders')).items.map((i) => String(i.ListDataID));
    const client = probeAfter(deps, async () => {
      await world.emu.admin.editItem('demo', 'orders', onPageOne!, { Data: { [F.customer]: 'slipped between' } });
      // The mark is a later second than that edit: the newest modification is another item's, 1.2 s on.
      await new Promise((r) => setTimeout(r, 1200));
      const last = (await world.emu.admin.exportList('demo', 'orders')).items.at(-1)!;
      await world.emu.admin.editItem('demo', 'orders', String(last.ListDataID), { Data: { [F.customer]: 'the mark' } });
    });
    const r = await pullList({ ...deps, client, startProbesEarly: true }, world.config.lists[0]!);
    expect(r.status).toBe('succeeded');
    const pages = (await queryRequests(world)).filter((e) => body(e).PageSize === 100 && !body(e).Filters?.length);
    expect(pages.filter((e) => e.pageIndex === 1)).toHaveLength(1); // believed: the counts agreed
    // The mirror holds the edit (its row equals the platform's).
    await expectMirrorEqualsPlatform(world);
  });

  it('an item created after page 1 was served and before the probes: the counts differ, page 1 is asked again after them', async () => {
    w = await startWorld({ emulator: { items: 400 }, list: { pageSize: 100 } });
    const world = w;
    const deps = world.deps();
    const client = probeAfter(deps, async () => {
      await world.emu.admin.createItem('demo', 'orders', { Data: { [F.customer]: 'created between' } });
    });
    const r = await pullList({ ...deps, client, startProbesEarly: true }, world.config.lists[0]!);
    expect(r.status).toBe('succeeded');
    const pages = (await queryRequests(world)).filter((e) => body(e).PageSize === 100 && !body(e).Filters?.length);
    expect(pages.filter((e) => e.pageIndex === 1)).toHaveLength(2);
    expect(r.counters.rows_inserted).toBe(401);
    await expectMirrorEqualsPlatform(world);
  });
});
