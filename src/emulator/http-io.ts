import type { IncomingMessage, ServerResponse } from 'node:http';

/** Small node:http helpers: read a body, send a text body. */

export const MAX_BODY_BYTES = 16 * 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor() {
    super(`request body larger than ${MAX_BODY_BYTES} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new BodyTooLargeError());
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

export function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = 'application/json; charset=utf-8',
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendText(res, status, JSON.stringify(value));
}
