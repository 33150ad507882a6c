/**
 * A TCP proxy in front of a server, to make it refuse connections for a
 * while: `down()` stops listening and cuts every connection (new ones get
 * ECONNREFUSED), `up()` listens on the same port again.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = async (): Promise<void> => {
    const s = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const sock of [client, upstream]) {
        sockets.add(sock);
        sock.on('close', () => sockets.delete(sock));
        sock.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', end);
      upstream.on('close', end);
    });
    await new Promise<void>((r) => s.listen(port, '127.0.0.1', r));
    port = (s.address() as { port: number }).port;
    server = s;
  };
  const down = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.destroy();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };
  await listen();
  return {
    get port() {
      return port;
    },
    down,
    up: listen,
    close: down,
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function viaProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  return u.toString();
}
