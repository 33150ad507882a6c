import type { ItemDeliverySettings, ItemDeliveryStats, ItemHook } from './item-hooks.js';
import type { ActivityCounts, ActivitySettings } from './activity.js';
import type { ResetOptions, RuntimeSettings } from './emulator-state.js';
import type { FaultSettings, FaultSettingsPatch } from './faults.js';
import type { FieldMeta, FieldSpec } from './field-types.js';
import type { EmulatorStats, RequestLogEntry } from './request-log.js';
import type { ItemRecord } from './store.js';
import type { HookDelivery, HookEventBody, HookSubscription } from './webhooks.js';

/** A typed fetch wrapper over the emulator's /_admin API (for tests and the demo). */

export interface ResetResult {
  lists: Array<{ appID: string; listID: string; count: number }>;
  users: number;
  timeZone: string;
}

export interface ExportedList {
  fields: FieldMeta[];
  count: number;
  /** Every current item with every field, sorted by ListDataID (IDs as strings). */
  items: ItemRecord[];
}

export interface ActivityState {
  settings: ActivitySettings | null;
  totals: ActivityCounts;
}

export interface ClockState {
  now: string;
  platformNow: string;
  timeZone: string;
  pinned: boolean;
}

export class EmulatorAdminError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'EmulatorAdminError';
    this.status = status;
  }
}

export class EmulatorAdminClient {
  readonly url: string;

  /** `url`: the emulator's root (`http://127.0.0.1:PORT`). */
  constructor(url: string) {
    this.url = url.replace(/\/+$/, '');
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    const res = await fetch(`${this.url}/_admin${path}`, init);
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? null : JSON.parse(text);
    } catch {
      throw new EmulatorAdminError(res.status, `emulator admin ${method} ${path}: response is not JSON: ${text.slice(0, 200)}`);
    }
    if (!res.ok) {
      const msg = typeof json === 'object' && json !== null && 'error' in json ? String((json as { error: unknown }).error) : text;
      throw new EmulatorAdminError(res.status, `emulator admin ${method} ${path} failed (${res.status}): ${msg}`);
    }
    return json as T;
  }

  private static listPath(appID: string, listID: string): string {
    return `/lists/${encodeURIComponent(appID)}/${encodeURIComponent(listID)}`;
  }

  /** Rebuilds the data; `{}` restores the start options. */
  reset(opts: ResetOptions = {}): Promise<ResetResult> {
    const body = { ...opts, ...(opts.referenceDate instanceof Date ? { referenceDate: opts.referenceDate.toISOString() } : {}) };
    return this.call('POST', '/reset', body);
  }

  /** The runtime settings: field metadata arrangement and flag style, query lag. */
  settings(): Promise<RuntimeSettings> {
    return this.call('GET', '/settings');
  }

  /** Changes the runtime settings given, e.g. `{fieldMeta: 'control-only'}` or `{queryLagMs: 0}`. */
  setSettings(patch: Partial<RuntimeSettings>): Promise<RuntimeSettings> {
    return this.call('PUT', '/settings', patch);
  }

  faults(): Promise<FaultSettings> {
    return this.call('GET', '/faults');
  }

  /** Partial update; `null` restores a setting's default. */
  setFaults(patch: FaultSettingsPatch): Promise<FaultSettings> {
    return this.call('PUT', '/faults', patch);
  }

  /** Turns every fault off (defaults restored). */
  clearFaults(): Promise<FaultSettings> {
    return this.call('DELETE', '/faults');
  }

  requests(since = 0): Promise<RequestLogEntry[]> {
    return this.call('GET', `/requests?since=${since}`);
  }

  async clearRequests(): Promise<void> {
    await this.call('DELETE', '/requests');
  }

  stats(): Promise<EmulatorStats> {
    return this.call('GET', '/stats');
  }

  exportList(appID: string, listID: string): Promise<ExportedList> {
    return this.call('GET', `${EmulatorAdminClient.listPath(appID, listID)}/export`);
  }

  getItem(appID: string, listID: string, id: string): Promise<ItemRecord> {
    return this.call('GET', `${EmulatorAdminClient.listPath(appID, listID)}/items/${encodeURIComponent(id)}`);
  }

  /** Creates an item as another user; returns its ListDataID. */
  async createItem(
    appID: string,
    listID: string,
    body: { Data: Record<string, string>; Created?: string; UserID?: string },
  ): Promise<string> {
    const r = await this.call<{ ListDataID: string }>('POST', `${EmulatorAdminClient.listPath(appID, listID)}/items`, body);
    return r.ListDataID;
  }

  /** Edits an item as another user (bumps RowVersion); returns the new RowVersion. */
  async editItem(
    appID: string,
    listID: string,
    id: string,
    body: { Data: Record<string, string>; Modified?: string; UserID?: string; RowVersion?: number },
  ): Promise<number> {
    const r = await this.call<{ RowVersion: number }>(
      'PATCH',
      `${EmulatorAdminClient.listPath(appID, listID)}/items/${encodeURIComponent(id)}`,
      body,
    );
    return r.RowVersion;
  }

  /** Edits the first `count` items (all by default) at once, as a platform workflow does: one item event each. */
  async bulkEdit(appID: string, listID: string, body: { Data: Record<string, string>; count?: number; UserID?: string }): Promise<number> {
    const r = await this.call<{ edited: number }>('POST', `${EmulatorAdminClient.listPath(appID, listID)}/bulk-edit`, body);
    return r.edited;
  }

  async deleteItem(appID: string, listID: string, id: string): Promise<void> {
    await this.call('DELETE', `${EmulatorAdminClient.listPath(appID, listID)}/items/${encodeURIComponent(id)}`);
  }

  /** Adds a field at run time; existing items get its DefaultValue. */
  addField(appID: string, listID: string, field: FieldSpec): Promise<FieldMeta> {
    return this.call('POST', `${EmulatorAdminClient.listPath(appID, listID)}/fields`, field);
  }

  /** Renames a field's display name, as a list designer does on the platform. */
  renameField(appID: string, listID: string, fieldName: string, displayName: string): Promise<FieldMeta> {
    return this.call('PATCH', `${EmulatorAdminClient.listPath(appID, listID)}/fields/${encodeURIComponent(fieldName)}`, {
      DisplayName: displayName,
    });
  }

  /** Deletes a field and its values, as a list designer does on the platform. */
  async deleteField(appID: string, listID: string, fieldName: string): Promise<void> {
    await this.call('PATCH', `${EmulatorAdminClient.listPath(appID, listID)}/fields/${encodeURIComponent(fieldName)}`, { delete: true });
  }

  /**
   * Gives the slot `fieldName` to another field (a new FieldID unless one is given): what the platform
   * does when a deleted field's storage slot is reused. `keepValues`: items keep the slot's old values.
   */
  reuseSlot(
    appID: string,
    listID: string,
    fieldName: string,
    field: Omit<FieldSpec, 'FieldName'> & { FieldID?: string; keepValues?: boolean },
  ): Promise<FieldMeta> {
    return this.call('PATCH', `${EmulatorAdminClient.listPath(appID, listID)}/fields/${encodeURIComponent(fieldName)}`, { reuse: field });
  }

  /** Changes a field's kind (storage kind and/or control): the same FieldID, items keep their values. */
  changeFieldKind(appID: string, listID: string, fieldName: string, kind: { FieldType?: string; Type?: string }): Promise<FieldMeta> {
    return this.call('PATCH', `${EmulatorAdminClient.listPath(appID, listID)}/fields/${encodeURIComponent(fieldName)}`, { kind });
  }

  /** List item event subscriptions, delivery settings and delivery counts. */
  itemHooks(): Promise<{ subscriptions: ItemHook[]; delivery: ItemDeliverySettings; stats: ItemDeliveryStats }> {
    return this.call('GET', '/item-hooks');
  }

  /** Changes how list item events are delivered (delay, jitter, duplicates, loss, retries); null restores a default. */
  setItemDelivery(patch: { [K in keyof ItemDeliverySettings]?: ItemDeliverySettings[K] | null }): Promise<ItemDeliverySettings> {
    return this.call('PUT', '/item-hooks/delivery', patch);
  }

  /** Starts (or with null stops) simulated activity. */
  setActivity(activity: ActivitySettings | null): Promise<ActivityState> {
    return this.call('PUT', '/activity', activity);
  }

  /** Stops simulated activity (same as `setActivity(null)`). */
  stopActivity(): Promise<ActivityState> {
    return this.call('DELETE', '/activity');
  }

  activity(): Promise<ActivityState> {
    return this.call('GET', '/activity');
  }

  /** Fires one workflow-task event to every (or one) subscription; resolves when delivered. */
  fireHook(opts: { subscriptionId?: string; event?: Partial<HookEventBody> } = {}): Promise<HookDelivery[]> {
    return this.call('POST', '/hooks/fire', opts);
  }

  hooks(): Promise<{ subscriptions: HookSubscription[]; deliveries: HookDelivery[] }> {
    return this.call('GET', '/hooks');
  }

  /** Replays a delivery with the same body and headers. */
  redeliver(deliveryIndex: number): Promise<HookDelivery> {
    return this.call('POST', '/hooks/redeliver', { deliveryIndex });
  }

  /** Pins the clock used for Created/Modified of new changes (null: real time). */
  setClock(now: Date | string | null): Promise<ClockState> {
    return this.call('PUT', '/clock', { now: now instanceof Date ? now.toISOString() : now });
  }

  clock(): Promise<ClockState> {
    return this.call('GET', '/clock');
  }
}
