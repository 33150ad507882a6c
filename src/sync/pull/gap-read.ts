/**
 * Re-reading the gaps the delete watch found (see pull/delete-watch.ts): for
 * a boundary after page k, page k of the same query is asked again. Deletes
 * since have moved the items that slid past the boundary onto it, so the
 * page (with its neighbours when it does not reach both ends of the gap)
 * holds every item between the gap's two keys. Those items are the ones the
 * read may have missed; the pull writes them. A gap the pages cannot cover
 * within `MAX_PAGES_A_GAP` fetches is reported, and the pull holds its marks.
 *
 * `coverGap` is the pure decision: given contiguous pages as they are now,
 * does the slice reach from the gap's first key to its second, and which
 * items lie inside.
 */
import type { Item } from '../../platform/types.js';
import type { Gap, SortKey } from './delete-watch.js';

export const MAX_PAGES_A_GAP = 3;

export interface Slice {
  /** The first page of the slice (1 = the list starts here). */
  firstIndex: number;
  items: readonly Item[];
  /** The slice's last page was short: the list ends inside it. */
  reachesEnd: boolean;
}

export type Coverage = { covered: true; inside: Item[] } | { covered: false; need: 'before' | 'after' };

export function coverGap(gap: Gap, slice: Slice, keyOf: (item: Item) => SortKey, cmp: (a: SortKey, b: SortKey) => number): Coverage {
  const keys = slice.items.map(keyOf);
  const startsBefore = slice.firstIndex === 1 || keys.some((k) => cmp(k, gap.a) <= 0);
  if (!startsBefore) return { covered: false, need: 'before' };
  const endsAfter = slice.reachesEnd || (gap.b !== null && keys.some((k) => cmp(k, gap.b!) >= 0));
  if (!endsAfter) return { covered: false, need: 'after' };
  const inside = slice.items.filter((_, i) => cmp(keys[i]!, gap.a) > 0 && (gap.b === null || cmp(keys[i]!, gap.b) < 0));
  return { covered: true, inside };
}

export interface GapReadResult {
  items: Item[];
  /** Why a gap could not be re-read, or null. */
  unresolved: string | null;
}

/** Re-reads each gap through `fetchPage` (page index -> items, in the read's order and page size). */
export async function readGaps(
  gaps: readonly Gap[],
  fetchPage: (index: number) => Promise<readonly Item[]>,
  pageSize: number,
  keyOf: (item: Item) => SortKey,
  cmp: (a: SortKey, b: SortKey) => number,
): Promise<GapReadResult> {
  const found: Item[] = [];
  for (const gap of gaps) {
    const pages = new Map<number, readonly Item[]>([[gap.after, await fetchPage(gap.after)]]);
    let lo = gap.after;
    let hi = gap.after;
    for (;;) {
      const slice: Slice = {
        firstIndex: lo,
        items: range(lo, hi).flatMap((i) => pages.get(i)!),
        reachesEnd: pages.get(hi)!.length < pageSize,
      };
      const c = coverGap(gap, slice, keyOf, cmp);
      if (c.covered) {
        found.push(...c.inside);
        break;
      }
      if (pages.size >= MAX_PAGES_A_GAP) {
        return {
          items: found,
          unresolved: `items may have slid past the boundary after page ${gap.after} while paging (TotalCount fell by ${gap.drop}) and ${MAX_PAGES_A_GAP} pages around it did not cover the gap`,
        };
      }
      const index = c.need === 'before' ? --lo : ++hi;
      pages.set(index, await fetchPage(index));
    }
  }
  return { items: found, unresolved: null };
}

function range(lo: number, hi: number): number[] {
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}
