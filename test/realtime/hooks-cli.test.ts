/**
 * `listsync hooks subscribe --list`, `hooks list`, `hooks remove` and the real
 * time table of `status`, through the real binary against the emulator.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

describe('hooks commands for list item events', () => {
  let w: World;
  const env = (): Record<string, string> => ({ PLATFORM_API_KEY: w.emu.apiKey });

  beforeAll(async () => {
    w = await startWorld({ emulator: { items: 20 } });
    writeFileSync(
      join(w.cwd, 'listsync.config.json'),
      JSON.stringify({
        platform: { baseUrl: w.emu.baseUrl },
        database: { url: w.t.url, schema: 'mirror' },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders', realtime: true }],
        serve: { publicUrl: 'https://sync.example.com/base' },
      }),
    );
  });
  afterAll(async () => {
    await w?.close();
  });

  it('subscribes once, lists both kinds, removes here and on the platform', async () => {
    const first = await runCli(['hooks', 'subscribe', '--list', 'orders'], { cwd: w.cwd, env: env() });
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('created or modified');
    const again = await runCli(['hooks', 'subscribe', '--list', 'orders'], { cwd: w.cwd, env: env() });
    expect(again.stdout).toContain('already subscribed');
    const platform = await w.emu.admin.itemHooks();
    expect(platform.subscriptions).toHaveLength(2);
    expect(platform.subscriptions[0]!.CallbackUrl).toMatch(/^https:\/\/sync\.example\.com\/base\/hooks\/[A-Za-z0-9_-]{32}$/);

    const list = await runCli(['hooks', 'list'], { cwd: w.cwd, env: env() });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/lists\/demo\/orders\s+listsync\s+3\s/);
    expect(list.stdout).toMatch(/lists\/demo\/orders\s+listsync\s+4\s/);
    expect(list.stdout).not.toContain(platform.subscriptions[0]!.CallbackUrl.split('/').at(-1));

    const status = await runCli(['status'], { cwd: w.cwd, env: env() });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/real time:[\s\S]*orders\s+yes\s+0\s+0\s+0/);

    const id = (await w.t.db('listsync.webhook_subscriptions').where({ list_name: 'orders', type: 4 }).first('id')) as { id: number };
    const removed = await runCli(['hooks', 'remove', String(id.id)], { cwd: w.cwd, env: env() });
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('here and on the platform');
    expect((await w.emu.admin.itemHooks()).subscriptions.map((s) => s.EventType)).toEqual([3]);
    const after = await runCli(['status'], { cwd: w.cwd, env: env() });
    expect(after.stdout).toContain('MISSING');

    const bad = await runCli(['hooks', 'remove', '999'], { cwd: w.cwd, env: env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no webhook subscription with id 999');
  });

  it('reads the hook ID from a Location header when Data has none', async () => {
    await w.emu.admin.setItemDelivery({ hookIdIn: 'location' });
    await w.t.db('listsync.webhook_subscriptions').whereNotNull('list_name').delete();
    const r = await runCli(['hooks', 'subscribe', '--list', 'orders'], { cwd: w.cwd, env: env() });
    expect(r.code).toBe(0);
    const stored = (await w.t
      .db('listsync.webhook_subscriptions')
      .whereNotNull('list_name')
      .orderBy('type')
      .pluck('platform_id')) as string[];
    const onPlatform = (await w.emu.admin.itemHooks()).subscriptions.slice(-2).map((s) => s.Id);
    expect(stored).toEqual(onPlatform);
  });
});
