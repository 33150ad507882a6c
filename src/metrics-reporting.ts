/**
 * `/metrics` for the reporting surface: changes listsync saw in the lists'
 * fields (`listsync.schema_changes`), by list and kind, read at scrape time.
 */
import { Counter, type Registry } from 'prom-client';
import type { Knex } from './db.js';
import type { Logger } from './logger.js';
import { countSchemaChanges, SCHEMA_CHANGES_TABLE } from './store/schema-changes.js';

export function registerSchemaChangeMetrics(registry: Registry, db: Knex, logger?: Logger): void {
  const total = new Counter({
    name: 'listsync_schema_changes_total',
    help: `Changes seen in a list's fields (kind: added, removed, back, renamed, widened, ...), from ${SCHEMA_CHANGES_TABLE}.`,
    labelNames: ['list', 'kind'] as const,
    registers: [registry],
    async collect() {
      try {
        // A busy database keeps the last values rather than holding the scrape (see SCRAPE_WAIT_MS in metrics.ts).
        const counts = await Promise.race([
          countSchemaChanges(db),
          new Promise<undefined>((r) => setTimeout(() => r(undefined), 1000).unref()),
        ]);
        if (!counts) return;
        this.reset();
        for (const c of counts) this.inc({ list: c.list, kind: c.kind }, c.count);
      } catch (err) {
        logger?.warn({ err }, `metrics: could not read ${SCHEMA_CHANGES_TABLE}`);
      }
    },
  });
  void total;
}
