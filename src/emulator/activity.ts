import { READ_ONLY_FIELDS } from './field-types.js';
import { createItem, deleteItem, updateItem, type ItemChangeSink } from './items.js';
import { formatNaive } from './platform-time.js';
import { Prng, deriveSeed } from './prng.js';
import { genericRowFiller, valueGenerator } from './sample.js';
import type { EmulatorStore, ListData, TextColumn, User } from './store.js';
import type { WebhookHub } from './webhooks.js';
import type { EmulatorClock } from './emulated-clock.js';
import type { QueryLag } from './query-lag.js';

/**
 * Simulated activity: another user editing, creating and deleting items of
 * one list while a client syncs. Edits bump RowVersion and Modified; creates
 * get Created = now; deletes leave no tombstone. Optionally each change fires
 * a workflow-task webhook event.
 */

export interface ActivitySettings {
  appID: string;
  listID: string;
  editsPerSecond?: number;
  createsPerSecond?: number;
  deletesPerSecond?: number;
  /** The user the changes are made as (default: a user other than the API's). */
  userId?: string;
  /** Fire a `workflow/tasks` webhook event for every change. */
  hookEvents?: boolean;
  /** Seed of the random choices (default derived from the list). */
  seed?: number;
}

export interface ActivityCounts {
  edits: number;
  creates: number;
  deletes: number;
}

export interface ActivityHost {
  store(): EmulatorStore;
  readonly clock: EmulatorClock;
  readonly hooks: WebhookHub;
  readonly lag?: QueryLag;
  readonly itemHooks?: ItemChangeSink;
}

const TICK_MS = 50;

export class ActivityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ActivityError';
  }
}

export class ActivitySimulator {
  private readonly host: ActivityHost;
  private settings: ActivitySettings | null = null;
  private timer: NodeJS.Timeout | null = null;
  private prng = new Prng(1);
  private last = 0;
  private acc = { edits: 0, creates: 0, deletes: 0 };
  private counts: ActivityCounts = { edits: 0, creates: 0, deletes: 0 };

  constructor(host: ActivityHost) {
    this.host = host;
  }

  get current(): ActivitySettings | null {
    return this.settings === null ? null : { ...this.settings };
  }

  get totals(): ActivityCounts {
    return { ...this.counts };
  }

  /** Validates and starts (replacing any running activity). Throws ActivityError. */
  start(settings: ActivitySettings): void {
    const s = validateActivity(settings, this.host.store());
    this.stop();
    this.settings = s;
    this.prng = new Prng(s.seed ?? deriveSeed('activity', s.appID, s.listID));
    this.acc = { edits: 0, creates: 0, deletes: 0 };
    this.counts = { edits: 0, creates: 0, deletes: 0 };
    this.last = performance.now();
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.settings = null;
  }

  private tick(): void {
    const s = this.settings;
    if (s === null) return;
    const now = performance.now();
    const dt = (now - this.last) / 1000;
    this.last = now;
    const list = this.host.store().list(s.appID, s.listID);
    if (!list) {
      this.stop();
      return;
    }
    this.acc.edits += (s.editsPerSecond ?? 0) * dt;
    this.acc.creates += (s.createsPerSecond ?? 0) * dt;
    this.acc.deletes += (s.deletesPerSecond ?? 0) * dt;
    for (; this.acc.edits >= 1; this.acc.edits--) this.edit(list, s);
    for (; this.acc.creates >= 1; this.acc.creates--) this.create(list, s);
    for (; this.acc.deletes >= 1; this.acc.deletes--) this.remove(list, s);
  }

  private actor(s: ActivitySettings): string {
    return s.userId ?? this.host.store().otherUser.UserID;
  }

  private nowNaive(): { ms: number; naive: number } {
    const ms = this.host.clock.nowMs();
    return { ms, naive: this.host.store().zone.naiveFromMs(ms) };
  }

  private edit(list: ListData, s: ActivitySettings): void {
    if (list.count === 0) return;
    const slot = list.order[this.prng.int(list.count)] as number;
    const editable = list.dataColumns.filter(
      (c) => !c.meta.IsUnique && c.meta.FieldType !== 'File' && !READ_ONLY_FIELDS.has(c.meta.FieldName),
    );
    const users = this.host.store().users;
    const data: Record<string, string> = {};
    const n = Math.min(editable.length, 1 + this.prng.int(2));
    const created = list.created[slot] as number;
    for (let i = 0; i < n; i++) {
      const col = this.prng.pick(editable) as TextColumn;
      data[col.meta.FieldName] = valueGenerator(col.meta, users)(list.slotCount, created, this.prng);
    }
    updateItem(list, slot, data, {
      userId: this.actor(s),
      modifiedNaive: this.nowNaive().naive,
      lag: this.host.lag,
      events: this.host.itemHooks,
    });
    this.counts.edits++;
    this.event(s, 'TaskUpdated', (list.ids[slot] as bigint).toString());
  }

  private create(list: ListData, s: ActivitySettings): void {
    const users = this.host.store().users as User[];
    const { ms, naive } = this.nowNaive();
    const row = new Array<string>(list.dataColumns.length).fill('');
    genericRowFiller(list, users)(list.slotCount, naive, this.prng, row);
    const data: Record<string, string> = {};
    list.dataColumns.forEach((c, i) => {
      data[c.meta.FieldName] = row[i] as string;
    });
    const id = createItem(list, data, {
      userId: this.actor(s),
      createdMs: ms,
      createdNaive: naive,
      lag: this.host.lag,
      events: this.host.itemHooks,
    });
    this.counts.creates++;
    this.event(s, 'TaskCreated', id);
  }

  private remove(list: ListData, s: ActivitySettings): void {
    if (list.count === 0) return;
    const slot = list.order[this.prng.int(list.count)] as number;
    const id = deleteItem(list, slot, { lag: this.host.lag, events: this.host.itemHooks });
    this.counts.deletes++;
    this.event(s, 'TaskCancelled', id);
  }

  private event(s: ActivitySettings, name: string, listDataId: string): void {
    if (!s.hookEvents) return;
    const { ms, naive } = this.nowNaive();
    const hooks = this.host.hooks;
    const body = hooks.taskEvent({ Event: name }, { nowMs: ms, created: formatNaive(naive), assignee: this.actor(s), listDataId });
    void hooks.fire(body, { resource: 'workflow/tasks' });
  }
}

function validateActivity(input: unknown, store: EmulatorStore): ActivitySettings {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ActivityError(
      'activity: expected an object {appID, listID, editsPerSecond?, createsPerSecond?, deletesPerSecond?, userId?, hookEvents?}',
    );
  const a = input as Record<string, unknown>;
  const known = new Set(['appID', 'listID', 'editsPerSecond', 'createsPerSecond', 'deletesPerSecond', 'userId', 'hookEvents', 'seed']);
  for (const k of Object.keys(a)) if (!known.has(k)) throw new ActivityError(`activity.${k}: unknown key`);
  if (typeof a['appID'] !== 'string' || typeof a['listID'] !== 'string')
    throw new ActivityError('activity.appID and activity.listID must be strings');
  if (!store.list(a['appID'], a['listID'])) throw new ActivityError(`activity: list ${a['appID']}/${a['listID']} does not exist`);
  for (const k of ['editsPerSecond', 'createsPerSecond', 'deletesPerSecond'] as const) {
    const v = a[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 10_000))
      throw new ActivityError(`activity.${k}: must be a number from 0 to 10000 (got ${JSON.stringify(v)})`);
  }
  if (a['userId'] !== undefined && (typeof a['userId'] !== 'string' || !store.users.some((u) => u.UserID === a['userId']))) {
    throw new ActivityError(`activity.userId: ${JSON.stringify(a['userId'])} is not a user of the directory`);
  }
  if (a['hookEvents'] !== undefined && typeof a['hookEvents'] !== 'boolean')
    throw new ActivityError('activity.hookEvents: must be true or false');
  if (a['seed'] !== undefined && (typeof a['seed'] !== 'number' || !Number.isInteger(a['seed'])))
    throw new ActivityError('activity.seed: must be an integer');
  return { ...(a as unknown as ActivitySettings) };
}
