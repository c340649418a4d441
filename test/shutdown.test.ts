import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { testDatabase } from './helpers.js';
import { runCli, startServer } from './process.js';

function request(agent: http.Agent, url: string, method: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(url, { agent, method, headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A raw connection that has sent `head` and part of a body, and sends the rest only when told. */
async function slowPost(port: number, token: string, id: number): Promise<{ socket: Socket; finish(): void; answer: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const body = JSON.stringify({ id, name: `slow ${id}` });
  let answer = '';
  socket.on('data', (d) => (answer += d));
  socket.on('error', () => undefined);
  socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
  return { socket, finish: () => socket.write(body.slice(5)), answer: once(socket, 'close').then(() => answer) };
}

async function refused(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    return false;
  } catch (error) {
    return (error as { code?: string }).code === 'ECONNREFUSED';
  } finally {
    socket.destroy();
  }
}

async function setup(t: Parameters<typeof testDatabase>[0], env: Record<string, string> = {}) {
  const { url: databaseUrl } = await testDatabase(t);
  const token = (await runCli(['token', 'create', '--user', 'alice'], { DATABASE_URL: databaseUrl })).stdout.trim();
  const server = await startServer(t, { DATABASE_URL: databaseUrl, ...env });
  return { databaseUrl, token, server, port: Number(new URL(server.url).port) };
}

test('SIGTERM under load: in-flight requests answered, acknowledged creates kept, new connections refused, exit 0', async (t) => {
  const { databaseUrl, token, server, port } = await setup(t);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  // Connections the server has accepted before the signal: 20 pooled keep-alive sockets.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
  t.after(() => agent.destroy());
  await Promise.all(Array.from({ length: 20 }, () => request(agent, `${server.url}/healthz`, 'GET', {})));
  const slow = await slowPost(port, token, 999); // keeps the drain open until it is finished

  const inFlight = Array.from({ length: 20 }, (_, i) =>
    request(agent, `${server.url}/plants`, 'POST', headers, JSON.stringify({ id: i, name: `p${i}` })),
  );
  const signalled = Date.now();
  server.child.kill('SIGTERM');
  const answers = await Promise.all(inFlight);
  assert.deepEqual(answers.map((a) => a.status), Array(20).fill(200), 'every in-flight request was answered');

  // The listener closes once the sockets have settled (a fraction of a second).
  const waitingSince = Date.now();
  while (!(await refused(port))) {
    assert.ok(Date.now() - waitingSince < 3000, 'new connections are refused while draining');
    await sleep(50);
  }
  slow.finish();
  assert.match(await slow.answer, /^HTTP\/1\.1 200/, 'the slow request, in flight at the signal, was answered too');

  assert.equal(await server.exited, 0);
  const took = Date.now() - signalled;
  assert.ok(took < 10_000, `exited ${took} ms after SIGTERM`);
  assert.match(server.logs(), /"signal":"SIGTERM","msg":"shutting down"/);

  const again = await startServer(t, { DATABASE_URL: databaseUrl });
  const stored = (await (await fetch(`${again.url}/plants?limit=1000`, { headers })).json()) as Array<{ name: string }>;
  assert.deepEqual(stored.map((p) => p.name).sort(), [...Array.from({ length: 20 }, (_, i) => `p${i}`), 'slow 999'].sort());
  assert.equal(await again.stop(), 0);
});

test('while draining, readiness answers 503 50301 on connections still open', async (t) => {
  const { token, server, port } = await setup(t);
  const probe = connect(port, '127.0.0.1');
  await once(probe, 'connect');
  const slow = await slowPost(port, token, 1);
  server.child.kill('SIGTERM');
  await sleep(300);
  let answer = '';
  probe.on('data', (d) => (answer += d));
  probe.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(probe, 'close');
  assert.match(answer, /^HTTP\/1\.1 503/);
  assert.match(answer, /"error":50301/);
  assert.match(answer, /connection: close/i);
  slow.finish();
  assert.equal(await server.exited, 0);
});

test('a request that never finishes cannot hold the drain past DRAIN_TIMEOUT', async (t) => {
  const { token, server, port } = await setup(t, { DRAIN_TIMEOUT: '2s' });
  const stuck = await slowPost(port, token, 1); // never finished
  const signalled = Date.now();
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const took = Date.now() - signalled;
  assert.ok(took >= 1900 && took < 8000, `exited ${took} ms after SIGTERM`);
  assert.match(server.logs(), /requests still in flight at the drain deadline/);
  await stuck.answer; // its connection was closed
});

test('a second SIGTERM ends the process at once, exit 1', async (t) => {
  const { token, server, port } = await setup(t, { DRAIN_TIMEOUT: '60s' });
  await slowPost(port, token, 1);
  server.child.kill('SIGTERM');
  await sleep(300);
  const second = Date.now();
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 1);
  assert.ok(Date.now() - second < 3000);
});
