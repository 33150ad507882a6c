/**
 * Dates as the platform writes them: `YYYY-MM-DD` and `YYYY-MM-DD HH:mm:ss`
 * in the platform's time zone, without an offset. Parsing also accepts ISO
 * 8601, with or without an offset (without one, the platform's zone is meant).
 */
import { DateTime, IANAZone } from 'luxon';

export type Instant = Date | DateTime;

function zoneOf(zone: string): string {
  if (!IANAZone.isValidZone(zone) && zone !== 'UTC')
    throw new RangeError(`Unknown time zone "${zone}" (use an IANA name such as "Asia/Shanghai" or "UTC")`);
  return zone;
}

function inZone(instant: Instant, zone: string): DateTime {
  const dt = instant instanceof Date ? DateTime.fromJSDate(instant) : instant;
  if (!dt.isValid) throw new RangeError(`Invalid date: ${dt.invalidExplanation ?? String(instant)}`);
  return dt.setZone(zoneOf(zone));
}

/** The calendar date of `instant` in `zone`: `YYYY-MM-DD`. */
export function platformDate(instant: Instant, zone: string): string {
  return inZone(instant, zone).toFormat('yyyy-MM-dd');
}

/** The wall-clock time of `instant` in `zone`: `YYYY-MM-DD HH:mm:ss`. */
export function platformDateTime(instant: Instant, zone: string): string {
  return inZone(instant, zone).toFormat('yyyy-MM-dd HH:mm:ss');
}

/**
 * Reads `YYYY-MM-DD HH:mm:ss` (fractions allowed), `YYYY-MM-DD` (midnight) or
 * ISO 8601; values without an offset are wall-clock times in `zone`. The
 * result is expressed in `zone`. Throws RangeError on anything else.
 */
export function parsePlatformDateTime(text: string, zone: string): DateTime {
  const z = zoneOf(zone);
  const s = text.trim();
  let dt = DateTime.fromSQL(s, { zone: z });
  if (!dt.isValid) dt = DateTime.fromISO(s, { zone: z });
  if (!dt.isValid)
    throw new RangeError(
      `Not a platform date or date-time: ${JSON.stringify(text)} (expected YYYY-MM-DD HH:mm:ss, YYYY-MM-DD or ISO 8601)`,
    );
  return dt.setZone(z);
}

/** Like parsePlatformDateTime, but undefined instead of throwing (empty strings too). */
export function tryParsePlatformDateTime(text: string | null | undefined, zone: string): DateTime | undefined {
  if (text === null || text === undefined || text.trim() === '') return undefined;
  try {
    return parsePlatformDateTime(text, zone);
  } catch {
    return undefined;
  }
}
