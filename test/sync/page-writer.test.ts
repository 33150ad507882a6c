/**
 * The ordered page writer with pages committing out of order: the checkpoint
 * beside every commit pairs a resume page with the accounting of exactly the
 * pages before it, so a resumed run's completeness check counts every page.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureMirrorTable, type TableMapping } from '../../src/mirror/index.js';
import type { Page } from '../../src/platform/types.js';
import { startRun } from '../../src/store/runs.js';
import { readState } from '../../src/store/state.js';
import { PageWriter } from '../../src/sync/pull/page-writer.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { orderItem, ordersTable } from '../mirror/fixtures.js';

let t: TestDatabase;
let mapping: TableMapping;
beforeAll(async () => {
  t = await createTestDatabase();
  mapping = await ensureMirrorTable(t.db, ordersTable());
});
afterAll(async () => t?.drop());

const page = (index: number): Page => ({
  index,
  pageCount: 4,
  totalCount: 40,
  items: Array.from({ length: 10 }, (_, i) => orderItem(index * 10 + i)),
});

it('never records a resume page beside the accounting of fewer pages, even when a later page commits first', async () => {
  // Page 2 already mirrored with a row that another transaction holds locked: its upsert waits.
  await t.db.transaction(async (trx) => {
    await trx.raw(`select set_config('listsync.writer', 'on', true)`);
    await trx.raw(`insert into mirror.orders (id, row_version) values (?, 0)`, [orderItem(20).ListDataID as string]);
  });
  const runId = await startRun(t.db, 'orders', 'pull');
  const writer = new PageWriter(
    {
      db: t.db,
      mapping,
      zone: 'UTC',
      runId,
      list: 'orders',
      job: 'pull',
      concurrency: 2,
      onPending: async () => ({ conflicts: 0 }),
      takeRequests: () => ({}),
      onWritten: () => undefined,
    },
    1,
    { received: 0 },
  );
  const blocker = await t.db.transaction();
  await blocker.raw(`select 1 from mirror.orders where id = ? for update`, [orderItem(20).ListDataID as string]);
  await writer.write(page(1), { received: 10 });
  await writer.write(page(2), { received: 20 }); // waits on the lock
  await writer.write(page(3), { received: 30 }); // commits while page 2 waits
  const pagesCommitted = async () => Number((await t.db('listsync.sync_runs').where({ id: runId }).first('pages')).pages);
  for (let i = 0; i < 200 && (await pagesCommitted()) < 2; i++) await new Promise((r) => setTimeout(r, 10));
  expect(await pagesCommitted()).toBe(2); // pages 1 and 3
  const whilePage2Waits = (await readState<{ received: number; nextPage: number }>(t.db, 'orders', 'pull')).checkpoint!;
  await blocker.commit();
  await writer.drain();
  await writer.recordResumePoint();
  const after = (await readState<{ received: number; nextPage: number }>(t.db, 'orders', 'pull')).checkpoint!;
  // While page 2 is uncommitted, the resume point is page 2 with page 1's accounting, never page 4 with page 2's or 3's.
  expect(whilePage2Waits).toMatchObject({ nextPage: 2, received: 10 });
  expect(after).toMatchObject({ nextPage: 4, received: 30 });
  expect(writer.nextPage).toBe(4);
});
