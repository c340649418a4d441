import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { nearCapAt } from '../../src/http/plugins/connections.js';
import { testApp, testDatabase } from '../helpers/app.js';
import { logLines, startServer, type LogLine, type ServerProcess } from '../helpers/process.js';

/**
 * A keep-alive client: connects from `localAddress` (any of 127.0.0.0/8 is this machine's loopback),
 * sends one GET /healthz and then stays silent. `first` settles with the status of the answer, or with
 * 0 if the server closed the connection without one. `closed` settles when the connection is closed.
 */
function silentClient(t: TestContext, port: number, localAddress: string): { socket: Socket; first: Promise<number>; closed: Promise<void> } {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  t.after(() => socket.destroy());
  socket.on('error', () => undefined);
  let received = '';
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const first = new Promise<number>((resolve) => {
    socket.on('data', (data) => {
      received += data.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1]));
    });
    void closed.then(() => resolve(0));
  });
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  return { socket, first, closed };
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

test('connections over MAX_CONNECTIONS_PER_ADDRESS from one address are closed at once; a client from another address is still served', async (t) => {
  const server = await startServer(t, {
    DATABASE_URL: (await testDatabase(t)).url, LOG_FORMAT: 'json', MAX_CONNECTIONS: '8', MAX_CONNECTIONS_PER_ADDRESS: '3',
  });
  const port = portOf(server.url);
  // One at a time, each answered (or closed) before the next: the server has counted it by then.
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) statuses.push(await silentClient(t, port, '127.0.0.1').first);
  assert.deepEqual(statuses, [200, 200, 200, 0, 0, 0, 0, 0], 'three served and kept open, the others closed without an answer');
  assert.equal(await silentClient(t, port, '127.0.0.2').first, 200, 'another address is served while the first holds its connections');
  const refused = await logLine(server, /MAX_CONNECTIONS_PER_ADDRESS/);
  assert.equal(refused.address, '127.0.0.1');
  assert.equal(logLines(server.logs()).filter((l) => l.msg === refused.msg).length, 1, 'refusals are logged once, not once each');
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

test('TRUST_PROXY proxies are not limited per address; other addresses are', async (t) => {
  const { app } = await testApp(t, { maxConnections: 64, maxConnectionsPerAddress: 2, trustProxy: '127.0.0.1' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const fromProxy: number[] = [];
  for (let i = 0; i < 4; i++) fromProxy.push(await silentClient(t, port, '127.0.0.1').first);
  assert.deepEqual(fromProxy, [200, 200, 200, 200]);
  const fromOther: number[] = [];
  for (let i = 0; i < 3; i++) fromOther.push(await silentClient(t, port, '127.0.0.3').first);
  assert.deepEqual(fromOther, [200, 200, 0]);
});

test('idle connections start being closed at 7/8 of MAX_CONNECTIONS, below the cap', () => {
  assert.equal(nearCapAt(4096), 3584);
  assert.equal(nearCapAt(8), 7);
  assert.equal(nearCapAt(4), 3);
  assert.equal(nearCapAt(1), 1);
});
