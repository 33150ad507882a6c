/** Answer decoding, table by table: what an HTTP answer amounts to, and what its Data holds. */
import { describe, expect, it } from 'vitest';
import {
  type RawAnswer,
  applicationsInAnswer,
  countOf,
  decodeAnswer,
  directoryRows,
  hookIdInAnswer,
  idInAnswer,
  itemInAnswer,
  listsInAnswer,
  toEnvelope,
} from '../../src/platform/answer-decoding.js';
import { PlatformError } from '../../src/platform/platform-errors.js';

const raw = (statusCode: number, text: string, over: Partial<RawAnswer> = {}): RawAnswer => ({
  statusCode,
  text,
  retryAfterMs: undefined,
  location: undefined,
  durationMs: 12,
  ...over,
});

describe('decodeAnswer', () => {
  it.each([
    ['a 2xx with Status 0 is a success', raw(200, '{"Status":0,"Data":[1],"Message":""}'), { ok: true, httpStatus: 200, bytes: 36 }],
    ['Status as a digit string', raw(201, '{"Status":"0","Data":null}'), { ok: true, httpStatus: 201 }],
    [
      'a 2xx with a non-zero Status is a refusal with its Message',
      raw(200, '{"Status":40001,"Message":"Field Notes is not indexed"}'),
      { ok: false, kind: 'answer', httpStatus: 200, status: 40001, message: 'Field Notes is not indexed' },
    ],
    [
      'an empty Message is no message',
      raw(200, '{"Status":50000,"Message":""}'),
      { ok: false, kind: 'answer', status: 50000, message: undefined },
    ],
    [
      'a 429 envelope keeps the Retry-After',
      raw(429, '{"Status":42900,"Message":"Too Many Requests"}', { retryAfterMs: 2000 }),
      { ok: false, kind: 'answer', httpStatus: 429, status: 42900, retryAfterMs: 2000 },
    ],
    [
      'a 2xx body that is not JSON is malformed',
      raw(200, '<html>'),
      { ok: false, kind: 'malformed', httpStatus: 200, code: 'EMALFORMED', message: 'response body is not valid JSON' },
    ],
    [
      'a 2xx body that is not the envelope is malformed',
      raw(200, '[1,2]'),
      { ok: false, kind: 'malformed', code: 'EMALFORMED', message: 'response body is not the {Status, Data, Message} envelope' },
    ],
    [
      'a 2xx body with a Status that is no number is malformed',
      raw(200, '{"Status":"ok"}'),
      { ok: false, kind: 'malformed', code: 'EMALFORMED' },
    ],
    [
      'a 503 body that is not JSON is a refusal without a message',
      raw(503, 'Service Unavailable', { retryAfterMs: 1000 }),
      { ok: false, kind: 'answer', httpStatus: 503, retryAfterMs: 1000, durationMs: 12 },
    ],
  ])('%s', (_name, answer, want) => {
    expect(decodeAnswer(answer)).toMatchObject(want);
  });

  it("keeps a success's Location, and no message of a body it could not read", () => {
    expect(decodeAnswer(raw(201, '{"Status":0,"Data":""}', { location: '/hooks/7' }))).toMatchObject({ location: '/hooks/7' });
    expect(decodeAnswer(raw(200, '{"Status":0}'))).not.toHaveProperty('location');
    expect(decodeAnswer(raw(502, 'Bad Gateway'))).not.toHaveProperty('message');
  });
});

describe('toEnvelope', () => {
  it.each([
    [
      { Status: 0, Data: [] },
      { Status: 0, Data: [], Message: '' },
    ],
    [
      { Status: '-1', Message: null },
      { Status: -1, Message: '' },
    ],
    [
      { Status: 0, Message: 42 },
      { Status: 0, Message: '42' },
    ],
    [
      { Status: 0, TotalCount: 3 },
      { Status: 0, TotalCount: 3 },
    ],
  ])('%j', (value, want) => {
    expect(toEnvelope(value)).toMatchObject(want);
  });

  it.each([[null], [[]], ['text'], [{}], [{ Status: '1.5' }], [{ Status: true }]])('%j is no envelope', (value) => {
    expect(toEnvelope(value)).toBeUndefined();
  });
});

describe('countOf', () => {
  it.each([
    [12, 12],
    ['12', 12],
    [Number.NaN, undefined],
    ['1e3', undefined],
    [null, undefined],
    [undefined, undefined],
  ])('%j: %j', (value, want) => {
    expect(countOf(value)).toBe(want);
  });
});

describe('reading Data', () => {
  it.each([
    ['1234567890123456789', '1234567890123456789'],
    [42, '42'],
    [{ Id: 7 }, '7'],
    [{ ID: '8' }, '8'],
    [{ id: '9' }, '9'],
    [{ ListDataID: '1234567890123456789' }, '1234567890123456789'],
  ])('idInAnswer(%j) is %s', (data, id) => {
    expect(idInAnswer(data, 'POST', '/lists/a/b/items')).toBe(id);
  });

  it.each([[null], [{}], [{ Name: 'x' }], [[1]]])('idInAnswer(%j) throws, naming the request', (data) => {
    expect(() => idInAnswer(data, 'POST', '/lists/a/b/items')).toThrow(
      /^POST \/lists\/a\/b\/items failed: HTTP 200, Status 0 but Data holds no ID$/,
    );
  });

  it.each([
    ['Data, over the Location', { ID: 'h1' }, '/hooks/h2', 'h1'],
    ['the Location when Data is empty', '', '/v1/hooks/h%202/?x=1', 'h 2'],
    ['the Location when Data holds no ID', { Name: 'x' }, '/hooks/h3', 'h3'],
  ])('hookIdInAnswer: %s', (_name, data, location, id) => {
    expect(hookIdInAnswer(data, location, 'POST', '/hooks')).toBe(id);
  });

  it('hookIdInAnswer throws when neither Data nor a Location has an ID', () => {
    expect(() => hookIdInAnswer(null, undefined, 'POST', '/hooks')).toThrow(PlatformError);
  });

  it.each([
    [{ ListDataID: '1' }, { ListDataID: '1' }],
    [[{ ListDataID: '2' }], { ListDataID: '2' }],
  ])('itemInAnswer(%j)', (data, item) => {
    expect(itemInAnswer(data, 'GET', '/lists/a/b/items/1')).toEqual(item);
  });

  it.each([[[]], [[{ a: 1 }, { b: 2 }]], ['x']])('itemInAnswer(%j) throws', (data) => {
    expect(() => itemInAnswer(data, 'GET', '/lists/a/b/items/1')).toThrow(/Data is not an object/);
  });

  it.each([
    ['an array', [{ AppID: 'a1', Title: 'Sales' }], [{ id: 'a1', title: 'Sales' }]],
    ['Items', { Items: [{ ApplicationID: 7, Name: 'HR' }] }, [{ id: '7', title: 'HR' }]],
    ['List, the title falling back to the ID', { List: [{ Id: 'x' }] }, [{ id: 'x', title: 'x' }]],
    ['null', null, []],
  ])('applicationsInAnswer: %s', (_name, data, apps) => {
    expect(applicationsInAnswer(data, 'GET', '/applications')).toEqual(apps);
  });

  it.each([
    [{ Rows: [] }, /neither an array nor holds one/],
    [[{ Title: 'no id' }], /an application has no ID \(looked for AppID, AppId, ApplicationID, ID, Id\)/],
  ])('applicationsInAnswer(%j) throws', (data, message) => {
    expect(() => applicationsInAnswer(data, 'GET', '/applications')).toThrow(message);
  });

  it.each([
    [
      'the application asked for',
      [{ ListID: 'l1', Title: 'Orders', Description: 'all' }],
      [{ appID: 'app', listID: 'l1', title: 'Orders', description: 'all' }],
    ],
    [
      'the application the record names, never its own ID',
      { Data: [{ ID: 'l2', AppId: 'other' }] },
      [{ appID: 'other', listID: 'l2', title: 'l2', description: '' }],
    ],
  ])('listsInAnswer: %s', (_name, data, lists) => {
    expect(listsInAnswer(data, 'app', 'GET', '/applications/app/lists')).toEqual(lists);
  });

  it.each([
    ['null', null, []],
    ['an array, non-objects dropped', [{ a: 1 }, 2, null], [{ a: 1 }]],
    ['the array under any key', { Records: [{ b: 2 }, 'x'] }, [{ b: 2 }]],
    ['an empty object', {}, []],
  ])('directoryRows: %s', (_name, data, rows) => {
    expect(directoryRows(data, 'GET', '/departments')).toEqual(rows);
  });

  it.each([[{ a: 1 }], ['x'], [3]])('directoryRows(%j) throws', (data) => {
    expect(() => directoryRows(data, 'GET', '/departments')).toThrow(/Data is not a list of entries/);
  });
});
