import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

/**
 * What the stand-in does with one request:
 * - `forward`: passes it to the real server and its answer back (status, body, Link, Retry-After);
 * - `forward-then-cut`: passes it on, lets the real server carry it out, then cuts the client's
 *   connection instead of answering (an answer lost on the way: a proxy restart, a network fault);
 * - an answer of its own (a 503 with a Retry-After, a proxy's HTML 502).
 */
export type Step = 'forward' | 'forward-then-cut' | { status: number; headers?: Record<string, string>; body?: string };

export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** performance.now() when the request arrived. */
  readonly at: number;
}

export interface StandIn {
  /** Where clients point: `http://127.0.0.1:port` + `prefix`. */
  readonly url: string;
  /** Every request that arrived, in order. */
  readonly seen: Seen[];
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += chunk;
  return text;
}

/**
 * A small real HTTP server in front of a plantstore server (or of nothing), for what a real server will
 * not do on cue: answer with a given Retry-After, lose an answer, speak HTML. The n-th request gets
 * `steps[n]`, later ones `then`. With `prefix`, it serves under that path (as a reverse proxy mounting
 * the API at /prefix/) and forwards without it.
 */
export async function standIn(
  t: TestContext,
  { target, steps = [], then = 'forward', prefix = '' }: { target?: string; steps?: Step[]; then?: Step; prefix?: string },
): Promise<StandIn> {
  const seen: Seen[] = [];
  const server = createServer(async (request, response) => {
    const step = steps[seen.length] ?? then;
    seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, at: performance.now() });
    const body = await bodyOf(request);
    if (typeof step === 'object') {
      response.writeHead(step.status, step.headers).end(step.body ?? '');
      return;
    }
    if (target === undefined) throw new Error('a forward step needs a target');
    const path = (request.url ?? '/').slice(prefix.length);
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'accept']) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const real = await fetch(new URL(path, target), { method: request.method ?? 'GET', headers, body: body === '' ? null : body });
    const text = await real.text();
    if (step === 'forward-then-cut') {
      request.socket.destroy();
      return;
    }
    const passed: Record<string, string> = {};
    for (const name of ['content-type', 'link', 'retry-after']) {
      const value = real.headers.get(name);
      if (value !== null) passed[name] = value;
    }
    response.writeHead(real.status, passed).end(text);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`, seen };
}
