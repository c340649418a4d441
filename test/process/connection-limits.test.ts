import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { nearCapAt } from '../../src/http/plugins/connections.js';
import { testApp, testDatabase } from '../helpers/app.js';
import { logLines, startServer, type LogLine, type ServerProcess } from '../helpers/process.js';
import { onlyAnswer, rawErrorBody } from '../helpers/raw-http.js';

/**
 * A keep-alive client: connects from `localAddress` (any of 127.0.0.0/8 is this machine's loopback),
 * sends one GET /healthz and then stays silent. `first` settles with the status of the answer, or with
 * 0 if the server closed the connection without one. `closed` settles with everything received when the
 * connection is closed. `again()` sends another GET /healthz and settles with the status of its answer.
 */
function silentClient(
  t: TestContext, port: number, localAddress: string,
): { socket: Socket; first: Promise<number>; closed: Promise<string>; again(): Promise<number> } {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  t.after(() => socket.destroy());
  socket.on('error', () => undefined);
  let received = '';
  const waiting: Array<(status: number) => void> = [];
  let delivered = 0;
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  socket.on('data', (data) => {
    received += data.toString('latin1');
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    while (delivered < statuses.length && waiting.length > 0) waiting.shift()?.(statuses[delivered++] as number);
  });
  void closed.then(() => waiting.splice(0).forEach((resolve) => resolve(0)));
  const ask = (): Promise<number> => {
    const answer = new Promise<number>((resolve) => waiting.push(resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    return answer;
  };
  return { socket, first: ask(), closed, again: ask };
}

const portOf = (url: string) => Number(new URL(url).port);

/** The first log line of the server whose message matches, once it has been written. */
function logLine(server: ServerProcess, message: RegExp): Promise<LogLine> {
  return new Promise((resolve) => {
    const look = (): void => {
      const line = logLines(server.logs()).find((l) => message.test(l.msg));
      if (!line) return;
      server.child.stdout?.off('data', look);
      resolve(line);
    };
    server.child.stdout?.on('data', look);
    look();
  });
}

test('near MAX_CONNECTIONS, silent connections from one address past its share are refused with a 503, never dropped unanswered; a client from another address is still served', async (t) => {
  const server = await startServer(t, {
    DATABASE_URL: (await testDatabase(t)).url, LOG_FORMAT: 'json', MAX_CONNECTIONS: '8', MAX_CONNECTIONS_PER_ADDRESS: '3',
  });
  const port = portOf(server.url);
  // One at a time, each answered before the next: the server has counted it by then. Below 7/8 of
  // MAX_CONNECTIONS the share is not enforced; from there a connection from this address, at its share,
  // is refused. Idle ones are closed a second later, so the address may get in again: it goes on until
  // two have been refused.
  const statuses: number[] = [];
  const refusals: string[] = [];
  while (refusals.length < 2 && statuses.length < 40) {
    const client = silentClient(t, port, '127.0.0.1');
    const status = await client.first;
    statuses.push(status);
    if (status === 503) refusals.push(await client.closed);
  }
  assert.deepEqual(statuses.slice(0, nearCapAt(8)), [200, 200, 200, 200, 200, 200, 200], 'served while the server has room, past the share');
  assert.equal(statuses.filter((s) => s !== 200 && s !== 503).length, 0, `every connection answered, none closed without a word: ${statuses.join(' ')}`);
  assert.equal(refusals.length, 2, `refused once near the cap: ${statuses.join(' ')}`);
  const refused = onlyAnswer(refusals[0] as string);
  assert.equal(refused.status, 503);
  assert.equal(rawErrorBody(refused).error, 50303);
  assert.equal(refused.headers['retry-after'], '2');
  assert.equal(refused.headers.connection, 'close');
  assert.equal(refused.headers['x-content-type-options'], 'nosniff');
  assert.equal(refused.headers['cache-control'], 'no-store');
  assert.equal(await silentClient(t, port, '127.0.0.2').first, 200, 'another address is served while the first holds its connections');
  const logged = await logLine(server, /MAX_CONNECTIONS_PER_ADDRESS/);
  assert.equal(logged.address, '127.0.0.1');
  assert.equal(logLines(server.logs()).filter((l) => l.msg === logged.msg).length, 1, 'refusals are logged once, not once each');
  assert.equal(logLines(server.logs()).filter((l) => l.msg === 'request failed').length, 0, 'a refusal is no failure');
});

test('near MAX_CONNECTIONS, the idle connections of an address over its share are closed first, down to its share; another address keeps its idle one', async (t) => {
  const { app } = await testApp(t, { maxConnections: 8, maxConnectionsPerAddress: 3 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const flooding: Array<ReturnType<typeof silentClient>> = [];
  for (let i = 0; i < 6; i++) {
    const client = silentClient(t, port, '127.0.0.1');
    assert.equal(await client.first, 200);
    flooding.push(client);
  }
  const other = silentClient(t, port, '127.0.0.2');
  assert.equal(await other.first, 200);
  // 7 of 8 open: the near-cap sweep starts. Three of the six from 127.0.0.1 are over its share; closing
  // them brings the server below 7/8, so nothing else is closed.
  let closedCount = 0;
  await new Promise<void>((resolve) => {
    for (const c of flooding) void c.closed.then(() => ++closedCount === 3 && resolve());
  });
  assert.equal(await other.again(), 200, 'the other address\'s idle connection was kept');
  const kept = flooding.filter((c) => !c.socket.destroyed);
  assert.equal(kept.length, 3, 'the flooding address keeps its share');
  for (const c of kept) assert.equal(await c.again(), 200);
});

test('near MAX_CONNECTIONS, connections idle for a second are closed, so that a new client is served', async (t) => {
  const server = await startServer(t, {
    DATABASE_URL: (await testDatabase(t)).url, LOG_FORMAT: 'json', MAX_CONNECTIONS: '4', MAX_CONNECTIONS_PER_ADDRESS: '0',
  });
  const port = portOf(server.url);
  const idle = [];
  for (let i = 0; i < 4; i++) {
    const client = silentClient(t, port, `127.0.0.${i + 1}`);
    assert.equal(await client.first, 200);
    idle.push(client);
  }
  // Every slot is held by a connection that sent one request and went silent. Without the early
  // closing they would be held until the keep-alive timeout (72 s); the bound is far below that and far
  // above the second they are given.
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('idle connections still open after 30 s')), 30_000);
  });
  try {
    await Promise.race([Promise.all(idle.map((c) => c.closed)), bound]);
  } finally {
    clearTimeout(timer);
  }
  assert.equal(await silentClient(t, port, '127.0.0.9').first, 200, 'a new client is served');
  assert.equal((await logLine(server, /near MAX_CONNECTIONS/)).maxConnections, 4, 'the early closing is logged');
});

test('near the cap, a connection whose request is still being answered is kept while the idle ones go', async (t) => {
  const { app } = await testApp(t, { maxConnections: 2, maxConnectionsPerAddress: 0 });
  // A route that answers only when told to: a request in progress for as long as the test wants.
  let release: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => {
    app.get('/slow', (_request, reply) => {
      release = () => void reply.send({ ok: true });
      resolve();
    });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const slow = connect({ port, host: '127.0.0.1' });
  slow.on('error', () => undefined);
  t.after(() => slow.destroy());
  let slowAnswer = '';
  const answered = new Promise<void>((resolve) => {
    slow.on('data', (d) => {
      slowAnswer += d.toString('latin1');
      if (slowAnswer.includes('{"ok":true}')) resolve();
    });
  });
  slow.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  await arrived;
  const idle = silentClient(t, port, '127.0.0.2');
  assert.equal(await idle.first, 200);
  await idle.closed; // the idle one goes
  assert.equal(slow.destroyed, false, 'the one with a request in progress stays');
  release();
  await answered;
  assert.match(slowAnswer, /^HTTP\/1\.1 200 /);
});

/**
 * An app with a route that answers only when told to; each request to it is in progress until then, so
 * that the near-cap sweep keeps its connection. `held(n)` settles once n requests have arrived.
 */
async function holdingApp(t: TestContext, options: Parameters<typeof testApp>[1]): Promise<{ port: number; held(n: number): Promise<void>; release(): void }> {
  const { app } = await testApp(t, options);
  const replies: Array<() => void> = [];
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  app.get('/hold', (_request, reply) => {
    replies.push(() => void reply.send({ ok: true }));
    for (const w of waiting.filter((w) => replies.length >= w.n)) w.resolve();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const release = () => replies.splice(0).forEach((send) => send());
  t.after(release);
  return {
    port: (app.server.address() as { port: number }).port,
    held: (n) => (replies.length >= n ? Promise.resolve() : new Promise((resolve) => waiting.push({ n, resolve }))),
    release,
  };
}

function hold(t: TestContext, port: number, localAddress: string): void {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  t.after(() => socket.destroy());
  socket.on('error', () => undefined);
  socket.write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
}

test('TRUST_PROXY proxies are not limited per address; other addresses are', async (t) => {
  const server = await holdingApp(t, { maxConnections: 64, maxConnectionsPerAddress: 2, trustProxy: '127.0.0.1' });
  const { port } = server;
  // 54 from the proxy and 2 from another address, each with a request in progress: 56 of 64 open, 7/8,
  // and room below the cap for the connections opened next.
  for (let i = 0; i < 54; i++) hold(t, port, '127.0.0.1');
  await server.held(54);
  for (let i = 0; i < 2; i++) hold(t, port, '127.0.0.3');
  await server.held(56);
  assert.equal(await silentClient(t, port, '127.0.0.1').first, 200, 'the proxy, far over the share, is served');
  const over = silentClient(t, port, '127.0.0.3');
  assert.equal(await over.first, 503, 'the other address, at its share, is refused');
  assert.match(await over.closed, /"error":50303/);
  // Refused connections waiting for their request are few per address: of six opened at once, two are
  // closed at once, and the four others still answer the request sent once those two have closed.
  const mutes = Array.from({ length: 6 }, () => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.3' });
    t.after(() => socket.destroy());
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    return { socket, closed: new Promise<string>((resolve) => socket.once('close', () => resolve(received))) };
  });
  let closedCount = 0;
  await new Promise<void>((resolve) => {
    for (const m of mutes) void m.closed.then(() => ++closedCount === 2 && resolve());
  });
  const waiting = mutes.filter((m) => !m.socket.destroyed);
  assert.equal(waiting.length, 4);
  for (const m of waiting) m.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  for (const m of waiting) assert.match(await m.closed, /^HTTP\/1\.1 503 [^]*"error":50303/);
  // One that sends no request is closed within a second, not left holding a slot.
  const mute = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.3' });
  t.after(() => mute.destroy());
  mute.on('error', () => undefined);
  await new Promise((resolve) => mute.once('close', resolve));
  server.release();
});

test('idle connections start being closed at 7/8 of MAX_CONNECTIONS, below the cap', () => {
  assert.equal(nearCapAt(4096), 3584);
  assert.equal(nearCapAt(8), 7);
  assert.equal(nearCapAt(4), 3);
  assert.equal(nearCapAt(1), 1);
});
