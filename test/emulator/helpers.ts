/** Plain-fetch helpers for the emulator conformance tests (no listsync client involved). */
import { connect, type Socket } from 'node:net';
import type { RunningEmulator, SeedFile } from '../../src/emulator/index.js';

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  json: T;
}

export interface Envelope<D = unknown> {
  Status: number;
  Data: D;
  Message: string;
  TotalCount?: number;
}

export type Item = Record<string, string | number>;

/** Sends a request to the emulator's /v1 API. `apiKey: null` sends none. */
export async function call<T = Envelope>(
  emu: Pick<RunningEmulator, 'baseUrl' | 'apiKey'>,
  method: string,
  path: string,
  body?: unknown,
  opts: { apiKey?: string | null; rawBody?: string } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = {};
  const key = opts.apiKey === undefined ? emu.apiKey : opts.apiKey;
  if (key !== null) headers['apiKey'] = key;
  const init: RequestInit = { method, headers };
  if (opts.rawBody !== undefined || body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = opts.rawBody ?? JSON.stringify(body);
  }
  const res = await fetch(emu.baseUrl + path, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as T };
}

export function query(emu: Pick<RunningEmulator, 'baseUrl' | 'apiKey'>, list: string, body: unknown): Promise<Reply<Envelope<Item[]>>> {
  return call<Envelope<Item[]>>(emu, 'POST', `/lists/${list}/items/query`, body);
}

/** A small list whose every item is known, for exact operator and sort expectations. */
export const QA_SEED: SeedFile = {
  timeZone: 'UTC',
  apiKeys: ['qa-key', 'qa-key-2'],
  users: { count: 5 },
  lists: [
    {
      appID: 'qa',
      listID: 'things',
      title: 'Things',
      fields: [
        { FieldName: 'Text1', FieldType: 'Text', Type: 'input', IsIndex: true },
        { FieldName: 'Num', FieldType: 'Bigint', Type: 'input_number', IsIndex: true },
        { FieldName: 'Price', FieldType: 'Decimal', Type: 'input_number', IsIndex: true },
        { FieldName: 'Day', FieldType: 'Datetime', Type: 'datepicker', IsIndex: true, Rules: { DateFormat: 'yyyy-MM-dd' } },
        { FieldName: 'When', FieldType: 'Datetime', Type: 'datepicker', IsIndex: true, Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } },
        { FieldName: 'Flag', FieldType: 'Bit', Type: 'switch', IsIndex: true },
        { FieldName: 'Tags', FieldType: 'Text', Type: 'checkbox', IsIndex: true, Rules: { Options: ['a', 'b', 'c'] } },
        { FieldName: 'Color', FieldType: 'Text', Type: 'radio', IsIndex: true },
        { FieldName: 'Notes', FieldType: 'Text', Type: 'textarea' },
      ],
      items: [
        {
          Title: 'alpha',
          Text1: 'apple',
          Num: '10',
          Price: '1.50',
          Day: '2026-01-01',
          When: '2026-01-05 23:30:00',
          Flag: '1',
          Tags: '["a"]',
          Color: 'red',
          Notes: 'n1',
          Created: '2025-12-01 08:00:00',
        },
        {
          Title: 'bravo',
          Text1: 'banana',
          Num: '2',
          Price: '20.00',
          Day: '2026-01-02',
          When: '2026-01-06 00:15:00',
          Flag: '0',
          Tags: '["a","b"]',
          Color: 'green',
          Created: '2025-12-02 09:00:00',
        },
        {
          Title: 'charlie',
          Text1: 'cherry',
          Num: '33',
          Price: '3.25',
          Day: '2026-01-03',
          When: '2026-01-05 00:00:00',
          Flag: '1',
          Tags: '',
          Color: 'blue',
          Created: '2025-12-03 10:00:00',
        },
        {
          Title: 'delta',
          Text1: '',
          Num: '',
          Price: '',
          Day: '',
          When: '',
          Flag: '0',
          Tags: '',
          Color: '',
          Created: '2026-01-02 11:00:00',
        },
        {
          Title: 'echo',
          Text1: 'apricot',
          Num: 'abc',
          Price: '7',
          Day: '2026-01-05',
          When: '2026-01-05 12:00:00',
          Flag: '1',
          Tags: '["c"]',
          Color: 'green',
          Created: '2026-01-03 12:00:00',
          Modified: '2026-01-04 12:00:00',
          RowVersion: 3,
        },
        {
          Title: 'foxtrot',
          Text1: 'Banana split',
          Num: '-5',
          Price: '0.99',
          Day: '2025-12-31',
          When: '2025-12-31 23:59:59',
          Flag: '0',
          Tags: '["b","c"]',
          Color: 'blue',
          Created: '2026-01-10 13:00:00',
        },
      ],
    },
    {
      appID: 'qa',
      listID: 'many',
      title: 'Forty-five generated items',
      fields: [{ FieldName: 'Code', FieldType: 'Text', Type: 'input', IsIndex: true }],
      generate: 45,
    },
  ],
};

export const titles = (items: Item[]): string[] => items.map((i) => String(i['Title']));

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `n` GET requests in the same instant: opens the connections first,
 * then writes every request in one synchronous loop (so a slow or busy
 * machine cannot spread the arrivals out, as `fetch` would).
 */
export async function burst(url: string, path: string, n: number, apiKey: string): Promise<RawReply[]> {
  const { hostname, port } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const s = connect(Number(port), hostname, () => resolve(s));
          s.once('error', reject);
        }),
    ),
  );
  const replies = sockets.map(
    (s) =>
      new Promise<RawReply>((resolve, reject) => {
        const chunks: Buffer[] = [];
        s.on('data', (c: Buffer) => chunks.push(c));
        s.once('error', reject);
        s.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const [head = '', body = ''] = text.split('\r\n\r\n', 2);
          const [statusLine = '', ...lines] = head.split('\r\n');
          const headers: Record<string, string> = {};
          for (const l of lines) {
            const i = l.indexOf(':');
            headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
          }
          resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
        });
      }),
  );
  const request = `GET ${new URL(url).pathname}${path} HTTP/1.1\r\nHost: ${hostname}\r\napiKey: ${apiKey}\r\nConnection: close\r\n\r\n`;
  for (const s of sockets) s.write(request);
  return Promise.all(replies);
}
