import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../src/emulator/admin.js';
import { FIELD_META_ARRANGEMENTS, parseSeedFile } from '../../src/emulator/index.js';

/** docs/emulator.md, checked against the emulator so the two cannot drift. */
const section = readFileSync(new URL('../../docs/emulator.md', import.meta.url), 'utf8');

describe('docs/emulator.md', () => {
  it('its seed example is a valid seed file', () => {
    const json = /```json\n([\s\S]*?)```/.exec(section);
    expect(json, 'a ```json block').not.toBeNull();
    expect(() => parseSeedFile(JSON.parse(json![1]!), 'docs/emulator.md')).not.toThrow();
  });

  it('documents every admin route and every field-metadata arrangement', () => {
    for (const route of ADMIN_ROUTES) {
      const [methods = '', path = ''] = route.split(' ');
      const documented = path.replace(/\?.*$/, '');
      // Table cells escape the pipe: GET\|PUT /_admin/faults
      expect(section, route).toContain(`${methods.replaceAll('|', '\\|')} ${documented}`);
    }
    for (const a of FIELD_META_ARRANGEMENTS) expect(section).toContain(`\`${a}\``);
    for (const option of ['--field-meta', '--query-lag', '--reference-date', '/healthz']) expect(section).toContain(option);
  });
});
