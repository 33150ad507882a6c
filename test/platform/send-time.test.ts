/** The rate limiter's arithmetic, table by table: the window's width, the next send time, round trips, stalls, pauses. */
import { describe, expect, it } from 'vitest';
import {
  type LogLimits,
  type LoggedSend,
  NO_STALL,
  afterLateness,
  burstWindowOf,
  earliestByLog,
  handlerDelay,
  keptSchedule,
  leftAt,
  nextSendTime,
  spreadOf,
  stallAllowance,
  throttlePauseMs,
  windowWidthMs,
} from '../../src/platform/send-time.js';

const sent = (...at: number[]): LoggedSend[] => at.map((t) => ({ at: t, unreported: false }));
const unreported = (...at: number[]): LoggedSend[] => at.map((t) => ({ at: t, unreported: true }));
const times = (n: number, t: number): number[] => Array.from({ length: n }, () => t);

describe('windowWidthMs', () => {
  const base = { baseWindowMs: 1030, spreadMs: 0, learnedMarginMs: 0, rateFactor: 1, stallMs: 0 };
  it.each([
    ['the base window alone', {}, 1030],
    ['widened by how much the handler delay varies', { spreadMs: 50 }, 1080],
    ['widened by the learned margin', { learnedMarginMs: 20 }, 1050],
    ['twice as wide at half the rate', { rateFactor: 0.5 }, 2060],
    ['widened by a stall, not scaled by the rate', { stallMs: 30 }, 1060],
    ['all of them', { spreadMs: 50, learnedMarginMs: 20, rateFactor: 0.5, stallMs: 10 }, 2210],
  ])('%s', (_name, over, width) => {
    expect(windowWidthMs({ ...base, ...over })).toBe(width);
  });

  it.each([
    [1030, 5, 10, 515],
    [1030, 1, 10, 103],
    [1000, 2, 2, 1000],
  ])('burstWindowOf(%d, %d of %d) is %d', (windowMs, burst, cap, width) => {
    expect(burstWindowOf(windowMs, burst, cap)).toBe(width);
  });
});

describe('leftAt', () => {
  it.each([
    ['no send yet', [], 1, 500, -Infinity],
    ['fewer sends than asked back', sent(100), 2, 500, -Infinity],
    ['the last send', sent(100, 200), 1, 500, 200],
    ['the one before it', sent(100, 200), 2, 500, 100],
    ['one not reported yet is leaving now', unreported(100), 1, 500, 500],
    ['...for at most 2 s after its grant', unreported(100), 1, 5000, 2100],
    ['...and never before its grant', unreported(100), 1, 50, 100],
  ])('%s', (_name, log, back, now, at) => {
    expect(leftAt(log, back, now)).toBe(at);
  });
});

describe('nextSendTime', () => {
  const limits = (over: Partial<LogLimits>): LogLimits => ({
    now: 0,
    log: [],
    windowCap: 10,
    windowMs: 1030,
    burst: 5,
    burstWindowMs: 515,
    spacedAt: -Infinity,
    ...over,
  });
  it.each([
    ['nothing sent: its slot', limits({}), 1000, -Infinity, 1000],
    ['a burst sent: the next burst a burst window later', limits({ now: 100, log: sent(...times(5, 0)) }), 0, -Infinity, 515],
    ['a window full: a window after its first send', limits({ now: 600, log: sent(...times(5, 0), ...times(5, 515)) }), 0, -Infinity, 1030],
    ['a burst not reported sent yet counts from now', limits({ now: 300, log: unreported(...times(5, 0)) }), 0, -Infinity, 815],
    [
      'one at a time: an interval after the schedule',
      limits({ now: 250, log: sent(240), burst: 1, burstWindowMs: 103, spacedAt: 200 }),
      0,
      -Infinity,
      303,
    ],
    ['a pause holds it back', limits({ now: 100, log: sent(...times(5, 0)) }), 0, 2000, 2000],
    ['a later slot holds it back', limits({ now: 100, log: sent(...times(5, 0)) }), 900, -Infinity, 900],
  ])('%s', (_name, l, slot, pausedUntil, at) => {
    expect(nextSendTime(slot, pausedUntil, l)).toBe(at);
  });

  it('before any send the log allows a send at once', () => {
    expect(earliestByLog(limits({}))).toBe(-Infinity);
  });
});

describe('keptSchedule', () => {
  it.each([
    ['on time: the due time', 1000, 100, 1100, 1100],
    ['less than half an interval late: still the due time', 1000, 100, 1140, 1100],
    ['half an interval late or more: now', 1000, 100, 1160, 1160],
    ['early (a burst): now', 1000, 100, 1050, 1050],
    ['the first send: now', -Infinity, 100, 5, 5],
  ])('%s', (_name, spacedAt, interval, now, at) => {
    expect(keptSchedule(spacedAt, interval, now)).toBe(at);
  });
});

describe('round trips', () => {
  it.each([
    ['the first answer is assumed to vary by 50 ms', [100], 100, 50],
    ['a few answers: at least 50 ms', [100, 80, 90, 110, 100], 110, 50],
    ['enough answers: over the quickest', [100, 80, 90, 120, 100, 95], 120, 40],
    ['the quickest itself held nothing', [100, 80, 90, 120, 100, 80], 80, 0],
  ])('handlerDelay: %s', (_name, rtts, rtt, delay) => {
    expect(handlerDelay(rtts, rtt)).toBe(delay);
  });

  it.each([
    [[], 0],
    [[10, 40, 20], 40],
    [[300, 10], 250],
  ])('spreadOf(%j) is %d', (delays, spread) => {
    expect(spreadOf(delays)).toBe(spread);
  });
});

describe('stalls', () => {
  it.each([
    ['none', NO_STALL, 0, 0],
    ['just seen', { ms: 100, at: 0 }, 0, 100],
    ['a half-life later', { ms: 100, at: 0 }, 2000, 50],
    ['two half-lives later', { ms: 100, at: 0 }, 4000, 25],
  ])('stallAllowance: %s', (_name, stall, now, room) => {
    expect(stallAllowance(stall, now)).toBe(room);
  });

  it.each([
    ['2 ms late is no stall', NO_STALL, 2, 0, NO_STALL],
    ['a first stall', NO_STALL, 30, 10, { ms: 30, at: 10 }],
    ['less than what is left of the last', { ms: 100, at: 0 }, 40, 2000, { ms: 100, at: 0 }],
    ['more than what is left of the last', { ms: 100, at: 0 }, 60, 2000, { ms: 60, at: 2000 }],
    ['capped at 250 ms', NO_STALL, 900, 5, { ms: 250, at: 5 }],
  ])('afterLateness: %s', (_name, stall, late, now, after) => {
    expect(afterLateness(stall, late, now)).toEqual(after);
  });
});

describe('throttlePauseMs', () => {
  const pause = { streak: 0, windowMs: 1030, baseMs: 1000, maxMs: 30_000 };
  it.each([
    ['Retry-After as given', 3000, {}, 3000],
    ['Retry-After 0', 0, {}, 0],
    ['no Retry-After: one window', undefined, {}, 1030],
    ['a negative Retry-After is none', -1, {}, 1030],
    ['doubling with the streak', undefined, { streak: 2 }, 4120],
    ['at most the maximum', undefined, { streak: 10 }, 30_000],
    ['at least the base', undefined, { windowMs: 400 }, 1000],
  ])('%s', (_name, retryAfterMs, over, ms) => {
    expect(throttlePauseMs(retryAfterMs, { ...pause, ...over })).toBe(ms);
  });
});
