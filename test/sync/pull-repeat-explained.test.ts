/** Why an ID served twice in by-created order is not a broken page: pull/repeat-explained.ts, by table. */
import { describe, expect, it } from 'vitest';
import { cursorMillis } from '../../src/sync/pull/plan.js';
import { repeatExplained } from '../../src/sync/pull/repeat-explained.js';

const ZONE = 'UTC';
const MARK = cursorMillis('2026-03-02 10:00:00', ZONE);
const item = (Modified: unknown) => ({ ListDataID: '1', Modified });

describe('repeatExplained', () => {
  it.each([
    {
      name: 'modified before the mark, count unchanged: unexplained',
      windowed: false,
      mark: MARK,
      modified: '2026-03-02 09:59:59',
      total: 10,
      prev: 10,
      want: false,
    },
    {
      name: 'modified in the mark’s second (whole seconds): explained',
      windowed: false,
      mark: MARK,
      modified: '2026-03-02 10:00:00',
      total: 10,
      prev: 10,
      want: true,
    },
    {
      name: 'modified after the mark: explained',
      windowed: false,
      mark: MARK,
      modified: '2026-03-02 10:05:00',
      total: 10,
      prev: 10,
      want: true,
    },
    {
      name: 'TotalCount moved between the two pages: explained',
      windowed: false,
      mark: MARK,
      modified: '2026-03-01 00:00:00',
      total: 11,
      prev: 10,
      want: true,
    },
    {
      name: 'no count before (the first page): only the time can explain',
      windowed: false,
      mark: MARK,
      modified: '2026-03-01 00:00:00',
      total: 10,
      prev: undefined,
      want: false,
    },
    {
      name: 'a date window: edits move items into it, always explained',
      windowed: true,
      mark: MARK,
      modified: '2026-03-01 00:00:00',
      total: 10,
      prev: 10,
      want: true,
    },
    {
      name: 'no start mark known: unexplained',
      windowed: false,
      mark: undefined,
      modified: '2026-03-02 10:05:00',
      total: 10,
      prev: 10,
      want: false,
    },
    { name: 'a time that does not parse: unexplained', windowed: false, mark: MARK, modified: 'soon', total: 10, prev: 10, want: false },
  ])('$name', ({ windowed, mark, modified, total, prev, want }) => {
    const explained = repeatExplained({ windowed, markMs: mark, cursorField: 'Modified', zone: ZONE });
    expect(explained(item(modified), total, prev)).toBe(want);
  });
});
