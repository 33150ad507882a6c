/**
 * The shapes a push is made of: what it is handed and what one change's
 * steps share. No behaviour here.
 */
import type { ListConfig } from '../../config.js';
import type { TableMapping } from '../../mirror/index.js';
import type { Version } from '../../platform/item-identity.js';
import type { Item } from '../../platform/types.js';
import type { JobDeps, PageDone } from '../run-job.js';

/** `signal`: the changes in flight are finished; the rest stay pending for the next push. */
export interface PushDeps extends JobDeps {
  clock?: () => Date;
  /** After each batch of changes is settled (progress). */
  onPage?: (p: PageDone) => void;
  /** Pauses before each repeated re-read or lookup (the platform's queries may lag). Default 250, 1000, 2000 ms. */
  rereadDelaysMs?: readonly number[];
}

/** What every step of one change works with. */
export interface ChangeContext {
  deps: PushDeps;
  list: ListConfig;
  mapping: TableMapping;
}

/** The platform's side of a conflict: its item and version now (`Version | null` where a delete judged by content met an item carrying none). */
export interface RemoteSide<V extends Version | null = Version> {
  item: Item;
  version: V;
}
