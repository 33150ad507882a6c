/** What every console page is drawn from: the database, the config, the instant it is drawn at, and the form token. */
import type { Config } from '../../config.js';
import type { Knex } from '../../db.js';

export interface PageContext {
  db: Knex;
  config: Config;
  now: Date;
  /** The CSRF token the page's forms carry. */
  csrf: string;
}

/** Rows per page of a paged table. */
export const PAGE_SIZE = 100;

/** `?page=N` (from 1); anything else is page 1. */
export function pageOf(url: URL): number {
  const n = Number(url.searchParams.get('page'));
  return Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? n : 1;
}
