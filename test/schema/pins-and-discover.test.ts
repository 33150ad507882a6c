/**
 * `lists[].columns` pins (a name, a type, or both), `platform.omitsEmptyValues`, and what `discover`
 * and `check` say about pins and names that are listsync's own (through the real CLI).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, pinnedNames, pinnedTypes } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { runCli } from '../helpers/cli.js';
import { startWorld, type World } from '../helpers/world.js';

const minimal = {
  platform: { baseUrl: 'http://127.0.0.1:4010/v1/', apiKey: 'k-123456' },
  database: { url: 'postgres://u:pw@127.0.0.1:5432/db' },
  lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
};
const withColumns = (columns: unknown) => ({ ...minimal, lists: [{ ...minimal.lists[0], columns }] });

describe('lists[].columns', () => {
  it('takes a name, or a name and/or a type; the short string form stays', () => {
    const c = parseConfig(withColumns({ Text1: 'status', Text2: { name: 'tags', type: 'text[]' }, Bigint1: { type: 'text' } }));
    expect(pinnedNames(c.lists[0]!.columns)).toEqual({ Text1: 'status', Text2: 'tags' });
    expect(pinnedTypes(c.lists[0]!.columns)).toEqual({ Text2: 'text[]', Bigint1: 'text' });
    expect(c.platform.omitsEmptyValues).toBe(false);
  });

  it('refuses an unknown type, an empty pin and a reserved name, naming the key and the value', () => {
    const bad = (columns: unknown): ConfigError => {
      try {
        parseConfig(withColumns(columns));
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return err as ConfigError;
      }
      throw new Error('expected a ConfigError');
    };
    const type = bad({ Text2: { type: 'array' } });
    expect(type.message).toContain('lists[0].columns.Text2');
    expect(type.message).toMatch(/text\[\]/);
    expect(bad({ Text2: {} }).message).toMatch(/give a "name", a "type", or both/);
    expect(bad({ Text2: { name: 'valid_from' } }).message).toMatch(/valid_from.*listsync adds itself|listsync adds itself.*valid_from/);
  });
});

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('discover and check', () => {
  it('show a pinned type as its source, and the suffixed column of a field named like a column of listsync', async () => {
    const seed = {
      lists: [
        {
          appID: 'app',
          listID: 'odd',
          fields: [
            { FieldName: 'Title', FieldType: 'Text', Type: 'input' },
            { FieldName: 'Text1', FieldType: 'Text', Type: 'input', DisplayName: 'Valid From' },
            { FieldName: 'Text2', FieldType: 'Text', Type: 'checkbox', DisplayName: 'Labels' },
          ],
          items: [],
        },
      ],
    };
    w = await startWorld({
      emulator: { sample: false, seed },
      list: { name: 'odd', appID: 'app', listID: 'odd', columns: { Text2: { name: 'tags', type: 'text[]' } } },
    });
    await w.emu.admin.setSettings({ fieldMeta: 'type-only' });
    const env = { PLATFORM_API_KEY: w.emu.apiKey, DATABASE_URL: w.t.url };
    const discover = await runCli(['--config', w.configFile, 'discover'], { env, cwd: w.cwd });
    expect(discover.code, discover.stderr).toBe(0);
    const line = (field: string) => discover.stdout.split('\n').find((l) => l.trimStart().startsWith(`${field} `)) ?? '';
    expect(line('Text2')).toMatch(/tags\s+text\[\]\s+lists\[\]\.columns/);
    expect(line('Text1')).toMatch(/valid_from_2/);
    expect(line('Text1')).toMatch(/"valid_from" is a column listsync adds itself/);

    const check = await runCli(['--config', w.configFile, 'check'], { env, cwd: w.cwd });
    expect(check.stdout + check.stderr).toMatch(
      /field Text1 \("Valid From"\) is named like listsync's own column valid_from, so its column is valid_from_2/,
    );
  });
});
