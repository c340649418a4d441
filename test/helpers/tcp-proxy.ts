import { once } from 'node:events';
import net from 'node:net';
import type { TestContext } from 'node:test';

/**
 * - forward: a transparent TCP proxy to the database.
 * - refuse: the database is down. New connections are refused (ECONNREFUSED) and open ones are cut.
 * - blackhole: the network hangs. Connections open, but nothing gets through in either direction.
 */
export type ProxyMode = 'forward' | 'refuse' | 'blackhole';

export interface TcpProxy {
  readonly port: number;
  /** `url` pointed at this proxy instead of the database itself. */
  via(url: string): string;
  set(mode: ProxyMode): Promise<void>;
}

export async function startProxy(t: TestContext, target: string): Promise<TcpProxy> {
  const { hostname, port: targetPort } = new URL(target);
  let mode: ProxyMode = 'forward';
  const open = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(targetPort || 5432), hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      open.add(from);
      from.on('data', (chunk) => mode === 'forward' && to.write(chunk));
      from.on('error', () => to.destroy());
      from.on('close', () => {
        open.delete(from);
        to.destroy();
      });
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;

  const proxy: TcpProxy = {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    async set(next) {
      if (next === mode) return;
      if (next === 'refuse') {
        for (const s of open) s.destroy();
        await new Promise((resolve) => server.close(resolve));
      } else if (mode === 'refuse') {
        server.listen(port, '127.0.0.1');
        await once(server, 'listening');
      }
      mode = next;
    },
  };
  t.after(async () => {
    for (const s of open) s.destroy();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  });
  return proxy;
}
