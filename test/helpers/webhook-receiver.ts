import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

/** One request a receiver got: its headers and its body, exactly as sent. */
export interface Received {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

/**
 * How the receiver answers the request (the n-th it got, from 1): a status, or 'hang' to never answer
 * (the connection stays open until the receiver closes).
 */
export type Answer = (request: Received, n: number) => number | 'hang';

export interface Receiver {
  /** http://127.0.0.1:<port>/hook */
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** Resolves once `n` requests have arrived (rejects after `hangMs`: a hang bound, not a speed check). */
  waitFor(n: number, hangMs?: number): Promise<Received[]>;
  /** Answers every request left hanging so far with `status`. */
  answerHanging(status: number): void;
  /** Stops listening and drops every connection (a receiver that is down). */
  close(): Promise<void>;
  /** Listens again on the same port. */
  reopen(): Promise<void>;
}

/** A webhook receiver on loopback: a plain node:http server that records what it gets. */
export async function receiver(t: TestContext, answer: Answer = () => 200, port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const hanging = new Set<ServerResponse>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(request);
      const status = answer(request, received.length);
      if (status === 'hang') {
        hanging.add(res);
      } else {
        if (status >= 300 && status < 400) res.setHeader('location', '/elsewhere');
        res.statusCode = status;
        res.end('ok');
      }
      for (const w of [...waiters]) if (received.length >= w.n) w.resolve();
    });
  };
  let server: Server;
  const listen = async (on: number): Promise<number> => {
    server = createServer(handle);
    server.listen(on, '127.0.0.1');
    await once(server, 'listening');
    return (server.address() as AddressInfo).port;
  };
  const actual = await listen(port);
  let open = true;
  const close = async (): Promise<void> => {
    if (!open) return;
    open = false;
    for (const res of hanging) res.destroy();
    hanging.clear();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  t.after(close);
  return {
    url: `http://127.0.0.1:${actual}/hook`,
    port: actual,
    received,
    waitFor(n, hangMs = 15_000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} requests, not ${n}, in ${hangMs} ms`)), hangMs);
        waiters.push({ n, resolve: () => { clearTimeout(timer); resolve(received); } });
      });
    },
    answerHanging(status) {
      for (const res of hanging) {
        res.statusCode = status;
        res.end('ok');
      }
      hanging.clear();
    },
    close,
    async reopen() {
      await listen(actual);
      open = true;
    },
  };
}

/** A port nothing listens on (for a receiver that is down from the start): bound, then released. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
