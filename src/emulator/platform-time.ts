import { IANAZone } from 'luxon';

/**
 * Platform time. The platform writes timestamps as `YYYY-MM-DD HH:mm:ss` in its
 * own time zone, without an offset. Internally the emulator keeps such a value
 * as "naive seconds": the wall-clock reading counted as if it were UTC. Naive
 * seconds sort like the strings, and `floor(naive / 86400)` is the calendar
 * day in the platform zone, which is what date filters compare.
 */

export const SECONDS_PER_DAY = 86_400;

/** Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm). */
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** Inverse of daysFromCivil: [year, month, day]. */
export function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [era * 400 + yoe + (m <= 2 ? 1 : 0), m, d];
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : String(n));
const dayStrings = new Map<number, string>();

/** `YYYY-MM-DD` for a day number (cached: there are few distinct days). */
export function formatDay(day: number): string {
  let s = dayStrings.get(day);
  if (s === undefined) {
    const [y, m, d] = civilFromDays(day);
    s = `${String(y).padStart(4, '0')}-${pad2(m)}-${pad2(d)}`;
    if (dayStrings.size < 200_000) dayStrings.set(day, s);
  }
  return s;
}

/**
 * `YYYY-MM-DD HH:mm:ss` for naive seconds, built as one flat string (a
 * concatenation would leave a tree of V8 cons strings: more memory per stored
 * value and more work for the GC).
 */
export function formatNaive(naive: number): string {
  const t = Math.floor(naive);
  const day = Math.floor(t / SECONDS_PER_DAY);
  const sod = t - day * SECONDS_PER_DAY;
  const [y, m, d] = civilFromDays(day);
  const h = Math.floor(sod / 3600);
  const mi = Math.floor((sod % 3600) / 60);
  const s = sod % 60;
  return String.fromCharCode(
    48 + (Math.floor(y / 1000) % 10),
    48 + (Math.floor(y / 100) % 10),
    48 + (Math.floor(y / 10) % 10),
    48 + (y % 10),
    45,
    48 + Math.floor(m / 10),
    48 + (m % 10),
    45,
    48 + Math.floor(d / 10),
    48 + (d % 10),
    32,
    48 + Math.floor(h / 10),
    48 + (h % 10),
    58,
    48 + Math.floor(mi / 10),
    48 + (mi % 10),
    58,
    48 + Math.floor(s / 10),
    48 + (s % 10),
  );
}

const DAY_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const NAIVE_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?$/;

function validDay(y: number, m: number, d: number): number | undefined {
  if (m < 1 || m > 12 || d < 1 || d > 31) return undefined;
  const day = daysFromCivil(y, m, d);
  const [, m2] = civilFromDays(day);
  return m2 === m ? day : undefined;
}

/** Day number of a strict `YYYY-MM-DD`, or undefined. */
export function parseDay(s: string): number | undefined {
  const m = DAY_RE.exec(s);
  if (!m) return undefined;
  return validDay(Number(m[1]), Number(m[2]), Number(m[3]));
}

/**
 * Naive seconds of `YYYY-MM-DD[ HH:mm[:ss]]` (a `T` separator is accepted too),
 * or undefined. The value is taken as a wall-clock reading: no zone applied.
 */
export function parseNaive(s: string): number | undefined {
  const m = NAIVE_RE.exec(s);
  if (!m) return undefined;
  const day = validDay(Number(m[1]), Number(m[2]), Number(m[3]));
  if (day === undefined) return undefined;
  const h = m[4] === undefined ? 0 : Number(m[4]);
  const mi = m[5] === undefined ? 0 : Number(m[5]);
  const sec = m[6] === undefined ? 0 : Number(m[6]);
  if (h > 23 || mi > 59 || sec > 59) return undefined;
  return day * SECONDS_PER_DAY + h * 3600 + mi * 60 + sec;
}

/** The platform's time zone: converts instants to naive seconds and back. */
export class PlatformZone {
  readonly name: string;
  private readonly zone: IANAZone;
  private readonly fixedOffset: number | undefined;
  private readonly offsets = new Map<number, number>();

  constructor(name: string) {
    if (!IANAZone.isValidZone(name)) {
      throw new RangeError(`timeZone: "${name}" is not a valid IANA time zone (e.g. "UTC", "Europe/Berlin")`);
    }
    this.name = name;
    this.zone = IANAZone.create(name);
    this.fixedOffset = name === 'UTC' || name === 'Etc/UTC' ? 0 : undefined;
  }

  static isValid(name: string): boolean {
    return IANAZone.isValidZone(name);
  }

  /** The zone's UTC offset in seconds at an instant (cached per quarter hour). */
  offsetSeconds(ms: number): number {
    if (this.fixedOffset !== undefined) return this.fixedOffset;
    const bucket = Math.floor(ms / 900_000);
    let off = this.offsets.get(bucket);
    if (off === undefined) {
      off = this.zone.offset(bucket * 900_000) * 60;
      if (this.offsets.size > 500_000) this.offsets.clear();
      this.offsets.set(bucket, off);
    }
    return off;
  }

  /** Naive seconds (platform wall clock) of an instant. */
  naiveFromMs(ms: number): number {
    return Math.floor(ms / 1000) + this.offsetSeconds(ms);
  }

  /** The instant (ms) of a platform wall-clock reading; in a DST gap or overlap, one of the candidates. */
  msFromNaive(naive: number): number {
    let ms = naive * 1000;
    ms -= this.offsetSeconds(ms) * 1000;
    ms = naive * 1000 - this.offsetSeconds(ms) * 1000;
    return ms;
  }

  format(ms: number): string {
    return formatNaive(this.naiveFromMs(ms));
  }

  /**
   * Naive seconds of a timestamp given in a seed file or admin call: either a
   * platform wall-clock value (`YYYY-MM-DD HH:mm:ss`, `YYYY-MM-DD`, `T` allowed)
   * or an ISO 8601 instant with `Z` or an offset. Undefined if neither.
   */
  parseTimestamp(s: string): number | undefined {
    const naive = parseNaive(s);
    if (naive !== undefined) return naive;
    if (/^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:?\d{2})$/.test(s)) {
      const ms = Date.parse(s);
      if (Number.isFinite(ms)) return this.naiveFromMs(ms);
    }
    return undefined;
  }
}
