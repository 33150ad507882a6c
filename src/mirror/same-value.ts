/**
 * Whether two of the platform's values of one field are the same value, as
 * its column reads them: `["1"]` and `[1]` are the same array, `1.50` and
 * `1.5` the same number, two date-times the same instant. Pure: no I/O.
 * Used wherever a verdict compares what was sent or held with what the
 * platform holds (the not-taken check, the three-way merge of a conflict).
 */
import type { ColumnKind } from './column-types.js';
import { fromPlatformToSql, NOT_CONVERTED, platformInstantMillis } from './convert.js';

export function samePlatformValue(kind: ColumnKind, a: unknown, b: unknown, zone: string): boolean {
  if ((a ?? '') === (b ?? '')) return true;
  const x = fromPlatformToSql(kind, a, zone);
  const y = fromPlatformToSql(kind, b, zone);
  if (x === NOT_CONVERTED || y === NOT_CONVERTED) return false;
  if (kind === 'numeric' && x !== null && y !== null) return Number(x) === Number(y) && trimZeros(x) === trimZeros(y);
  if (kind === 'timestamptz' && x !== null && y !== null) return platformInstantMillis(x, zone) === platformInstantMillis(y, zone);
  return x === y;
}

const trimZeros = (s: string): string => (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
