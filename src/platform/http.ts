/**
 * The one got instance listsync talks to the platform with: prefix URL (the
 * versioned base, ending /v1), the apiKey header (never the query string),
 * JSON bodies, a request timeout and keep-alive agents. Responses are read as
 * text and parsed by the caller (losslessly); got neither retries nor throws
 * on HTTP status: the client's own loop does both, so that every attempt
 * passes through the queue and the rate limiter.
 */
import http from 'node:http';
import https from 'node:https';
import got, { type Got } from 'got';

export interface HttpSettings {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  /** Idle sockets kept open for reuse. */
  maxFreeSockets: number;
}

export interface PlatformHttp {
  got: Got;
  destroy(): void;
}

export function createPlatformHttp(settings: HttpSettings): PlatformHttp {
  const agentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: settings.maxFreeSockets, scheduling: 'lifo' as const };
  const agent = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  const instance = got.extend({
    prefixUrl: `${settings.baseUrl.replace(/\/+$/, '')}/`,
    headers: {
      apiKey: settings.apiKey,
      accept: 'application/json',
      'user-agent': 'listsync',
    },
    responseType: 'text',
    timeout: { request: settings.timeoutMs },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
    agent,
  });
  return {
    got: instance,
    destroy() {
      agent.http.destroy();
      agent.https.destroy();
    },
  };
}
