/**
 * Upsert throughput into a mirror table: 100,000 rows of an orders-like list
 * in 1000-row batches, each in a transaction of its own as a pull page is,
 * after a 20,000-row first load into another table to warm up.
 *
 * - First load, as a pull writes one by default: `database.pageWriters` (2)
 *   batches in flight, the next batch copied in before anything is read once
 *   a batch was all new rows. Wall time from the first batch to the last
 *   commit; the items are built beforehand (a pull has them parsed already).
 * - The same with one batch at a time (`pageWriters: 1`), into a table of
 *   its own.
 * - Then the first table's rows again: unchanged, then every row changed.
 *
 * Database: BENCH_DATABASE_URL, else DATABASE_URL, else the local server.
 * Works in a schema of its own (dropped afterwards); listsync's own tables
 * are migrated if missing and removed again if the bench created them.
 *
 *   npx tsx bench/upsert.bench.ts            (BENCH_HISTORY=1: with version history)
 */
import { pathToFileURL } from 'node:url';
import { DEFAULT_PAGE_WRITERS } from '../src/config.js';
import { createDb, migrateLatest, OWN_SCHEMA } from '../src/db.js';
import { JOBS_SCHEMA } from '../src/engine/boss.js';
import { ensureMirrorTable, upsertItems, type TableMapping, type UpsertResult } from '../src/mirror/index.js';
import type { FieldMeta, Item } from '../src/platform/types.js';

const ROWS = 100_000;
const WARMUP_ROWS = 20_000;
const BATCH = 1000;
const ZONE = 'Asia/Shanghai';

const FIELDS: FieldMeta[] = [
  { FieldName: 'ListDataID', FieldType: 'Text', Type: 'id', IsSystem: true },
  { FieldName: 'RowVersion', FieldType: 'Bigint', Type: 'version', IsSystem: true },
  { FieldName: 'Created', FieldType: 'Datetime', Type: 'datepicker', IsSystem: true },
  { FieldName: 'Modified', FieldType: 'Datetime', Type: 'datepicker', IsSystem: true },
  { FieldName: 'CreatedBy', FieldType: 'Text', Type: 'input', IsSystem: true },
  { FieldName: 'ModifiedBy', FieldType: 'Text', Type: 'input', IsSystem: true },
  { FieldName: 'Title', FieldType: 'Text', Type: 'input', IsSystem: true },
  { FieldName: 'OrderDate', FieldType: 'Datetime', Type: 'datepicker', Rules: '{"DateFormat":"yyyy-MM-dd"}' },
  { FieldName: 'DeliveredAt', FieldType: 'Datetime', Type: 'datepicker', Rules: '{"DateFormat":"yyyy-MM-dd HH:mm:ss"}' },
  { FieldName: 'Amount', FieldType: 'Decimal', Type: 'input_number' },
  { FieldName: 'Quantity', FieldType: 'Bigint', Type: 'input_number' },
  { FieldName: 'Paid', FieldType: 'Bit', Type: 'switch' },
  { FieldName: 'Tags', FieldType: 'Text', Type: 'checkbox' },
  { FieldName: 'Customer', FieldType: 'Text', Type: 'lookup' },
  { FieldName: 'Status', FieldType: 'Text', Type: 'flowstatus' },
  { FieldName: 'Notes', FieldType: 'Text', Type: 'textarea' },
];

function item(n: number, version: number): Item {
  const day = String((n % 28) + 1).padStart(2, '0');
  const month = String((n % 12) + 1).padStart(2, '0');
  return {
    ListDataID: (7_100_000_000_000_000_000n + BigInt(n)).toString(),
    RowVersion: version,
    Created: `2025-${month}-${day} 0${n % 10}:1${n % 10}:2${n % 10}`,
    Modified: `2026-${month}-${day} 1${version % 10}:${String(n % 60).padStart(2, '0')}:00`,
    CreatedBy: `u${n % 40}`,
    ModifiedBy: `u${(n + version) % 40}`,
    Title: `Order ${n} v${version}`,
    OrderDate: `2025-${month}-${day}`,
    DeliveredAt: n % 4 ? `2026-${month}-${day} 1${n % 10}:0${n % 6}:3${n % 10}` : '',
    Amount: `${n % 100000}.${String(n % 100).padStart(2, '0')}`,
    Quantity: String(n * 7),
    Paid: n % 2 ? '1' : '0',
    Tags: n % 3 ? '["red","blue"]' : '[]',
    Customer: (7_200_000_000_000_000_000n + BigInt(n % 5000)).toString(),
    Status: ['Open', 'Approved', 'Shipped', 'Closed'][n % 4],
    Notes: n % 5 ? `note for order ${n}, version ${version}` : '',
  };
}

/** As a pull's page writer decides: the next batch is expected new when this one was all new rows. */
const allNew = (r: UpsertResult, size: number): boolean => r.inserted === size;

export default async function run(): Promise<Record<string, string | number>> {
  const url = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const db = createDb({ url, poolMax: 2, applicationName: 'listsync-bench' });
  const schema = `listsync_bench_${process.pid}`;
  const listName = `bench_upsert_${process.pid}`;
  const hadOwnSchema =
    ((await db.raw('select 1 from pg_namespace where nspname = ?', [OWN_SCHEMA])) as { rows: unknown[] }).rows.length > 0;
  try {
    await migrateLatest(db);
    const table = (name: string, tableName: string) =>
      ensureMirrorTable(db, {
        schema,
        list: { name, appID: 'bench', listID: 'orders', table: tableName },
        fields: FIELDS,
        idField: 'ListDataID',
        versionField: 'RowVersion',
        // BENCH_HISTORY=1: with lists[].history (every written version also goes to <table>_history).
        history: process.env.BENCH_HISTORY === '1',
      });
    // A first load into a table of its own warms up (compiled code, caches) and is not counted.
    const warmup = await table(`${listName}_warmup`, 'orders_warmup');
    for (let start = 0; start < WARMUP_ROWS; start += BATCH) {
      const items = Array.from({ length: BATCH }, (_, i) => item(start + i, 1));
      await db.transaction((trx) => upsertItems(trx, warmup, items, ZONE, { expectNew: start > 0 }));
    }
    const mapping = await table(listName, 'orders');
    const batches = (version: number): Item[][] =>
      Array.from({ length: ROWS / BATCH }, (_, b) => Array.from({ length: BATCH }, (_, i) => item(b * BATCH + i, version)));

    /**
     * All batches into `into`, `writers` at a time, as a pull's page writers write them: wall
     * time. Each writer copies its next batch in without reading first once its last batch was all new.
     */
    const load = async (
      into: TableMapping,
      all: Item[][],
      writers: number,
      expect: 'inserted' | 'updated' | 'unchanged',
    ): Promise<number> => {
      let next = 0;
      let counted = 0;
      const writer = async (): Promise<void> => {
        let expectNew = false;
        for (let b = next++; b < all.length; b = next++) {
          const r = await db.transaction((trx) => upsertItems(trx, into, all[b]!, ZONE, { expectNew }));
          expectNew = allNew(r, BATCH);
          counted += r[expect];
        }
      };
      const t0 = performance.now();
      await Promise.all(Array.from({ length: writers }, writer));
      const ms = performance.now() - t0;
      if (counted !== ROWS) throw new Error(`expected ${ROWS} rows ${expect}, counted ${counted}`);
      return Math.round((ROWS / ms) * 1000);
    };

    const firstLoad = await load(mapping, batches(1), DEFAULT_PAGE_WRITERS, 'inserted');
    const oneAtATime = await load(await table(`${listName}_one`, 'orders_one'), batches(1), 1, 'inserted');
    const unchanged = await load(mapping, batches(1), 1, 'unchanged');
    const changed = await load(mapping, batches(2), 1, 'updated');
    const version = ((await db.raw('show server_version')) as { rows: { server_version: string }[] }).rows[0]!.server_version;
    return {
      rows: ROWS,
      batch: BATCH,
      columns: mapping.columns.length,
      'batches in flight (database.pageWriters default)': DEFAULT_PAGE_WRITERS,
      'first load rows/s, as a pull writes (default page writers)': firstLoad,
      'first load rows/s, one batch at a time (pageWriters 1)': oneAtATime,
      'unchanged rows/s': unchanged,
      'all changed rows/s': changed,
      postgres: version,
    };
  } finally {
    await db.raw('drop schema if exists ?? cascade', [schema]);
    if (hadOwnSchema)
      await db('lists')
        .withSchema(OWN_SCHEMA)
        .whereIn('name', [listName, `${listName}_warmup`, `${listName}_one`])
        .del();
    // Both schemas `migrate` made: listsync's own and the job queue's (left behind, the next run's migrations would find half a queue).
    else await db.raw('drop schema if exists ??, ?? cascade', [OWN_SCHEMA, JOBS_SCHEMA]);
    await db.destroy();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(
    (figures) => {
      for (const [k, v] of Object.entries(figures)) console.log(`${k.padEnd(22)} ${typeof v === 'number' ? v.toLocaleString('en-US') : v}`);
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
