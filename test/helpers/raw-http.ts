import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { eventually } from './eventually.js';

/** One HTTP/1.1 answer read off a socket: status, lower-cased header names, body text. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * Sends raw bytes to the app (listening on loopback once asked) and returns everything it answers until
 * it closes the connection, or until `waitMs` passes (a bound for a hang; then we close it).
 * With `end`, the client half-closes after writing; Node's server then drops requests not yet answered
 * (it does not allow half-open connections), so by default the client waits for the server to close.
 */
export async function raw(app: FastifyInstance, bytes: string, { end = false, waitMs = 10_000 } = {}): Promise<string> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.write(Buffer.from(bytes, 'latin1'));
    if (end) socket.end();
  });
}

/**
 * Like `raw`, in parts: each is written once the server has read everything before it (its socket's
 * byte count, polled: reading bytes fires no event), so each part reaches the server in a read of its
 * own. `closed` says whether the server closed the connection within `waitMs` (else we did).
 */
export async function rawInParts(app: FastifyInstance, parts: readonly string[], { waitMs = 10_000 } = {}): Promise<{ received: string; closed: boolean }> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const accepted = once(app.server, 'connection') as Promise<[Socket]>;
  const socket = connect(port, '127.0.0.1');
  let received = '';
  let closed = false;
  socket.on('data', (d) => (received += d.toString('latin1')));
  socket.once('end', () => (closed = true));
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve());
  });
  const timer = setTimeout(() => socket.destroy(), waitMs);
  const [server] = await accepted;
  let sent = 0;
  for (const part of parts) {
    // Answered and closed early: the rest is not wanted.
    if (closed || socket.destroyed) break;
    const bytes = Buffer.from(part, 'latin1');
    socket.write(bytes);
    sent += bytes.length;
    await eventually(() => (server.bytesRead >= sent || closed || socket.destroyed ? true : undefined), 'the server reading a part');
  }
  await ended;
  clearTimeout(timer);
  return { received, closed };
}

/** Splits what a connection received into its answers (framed by Content-Length, or chunked). */
export function answers(received: string): RawAnswer[] {
  const result: RawAnswer[] = [];
  let rest = received;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) throw new Error(`an incomplete answer: ${JSON.stringify(rest.slice(0, 200))}`);
    const [statusLine = '', ...lines] = rest.slice(0, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]);
    if (!(status > 0)) throw new Error(`not an HTTP answer: ${JSON.stringify(rest.slice(0, 200))}`);
    const headers: Record<string, string> = {};
    for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
    rest = rest.slice(headEnd + 4);
    let body = '';
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const sizeEnd = rest.indexOf('\r\n');
        const size = parseInt(rest.slice(0, sizeEnd), 16);
        body += rest.slice(sizeEnd + 2, sizeEnd + 2 + size);
        rest = rest.slice(sizeEnd + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    result.push({ status, headers, body });
  }
  return result;
}

/** The one answer a connection received; fails when there were none or several. */
export function onlyAnswer(received: string): RawAnswer {
  const all = answers(received);
  if (all.length !== 1) throw new Error(`expected exactly one answer, got ${all.length}: ${JSON.stringify(received.slice(0, 600))}`);
  return all[0] as RawAnswer;
}

/** The Error body of an answer: exactly {error, message}, served as JSON. */
export function rawErrorBody(answer: RawAnswer): { error: number; message: string } {
  if (!String(answer.headers['content-type']).startsWith('application/json')) {
    throw new Error(`error answer content-type is ${answer.headers['content-type']}: ${answer.body}`);
  }
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  if (Object.keys(body).sort().join(',') !== 'error,message' || !Number.isInteger(body.error) || typeof body.message !== 'string') {
    throw new Error(`not an Error body: ${answer.body}`);
  }
  return body as { error: number; message: string };
}
