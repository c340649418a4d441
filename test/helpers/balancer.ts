import { once } from 'node:events';
import net from 'node:net';
import type { TestContext } from 'node:test';

/**
 * A load balancer in front of `bases`, as deploy/'s nginx is: each connection goes to the first instance
 * that accepts it. `seen` has the port of each connection's instance, in order.
 */
export async function balancer(t: TestContext, bases: string[]): Promise<{ url: string; seen: number[] }> {
  const ports = bases.map((base) => Number(new URL(base).port));
  const seen: number[] = [];
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    client.pause();
    const attempt = (i: number): void => {
      if (i === ports.length) return void client.destroy();
      const upstream = net.connect(ports[i]!, '127.0.0.1');
      upstream.once('error', () => attempt(i + 1));
      upstream.once('connect', () => {
        seen.push(ports[i]!);
        open.add(upstream);
        upstream.on('error', () => client.destroy());
        upstream.on('close', () => {
          open.delete(upstream);
          client.destroy();
        });
        client.on('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const socket of open) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, seen };
}
