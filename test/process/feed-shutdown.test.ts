import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { HANG_MS } from '../helpers/eventually.js';
import { cli } from '../helpers/cli.js';
import { logLines, startServer } from '../helpers/process.js';
import { subscribe } from '../helpers/sse.js';

/** Long, so that a drain held by the streams would show: the process would exit only at this deadline. */
const DRAIN_TIMEOUT_MS = 30_000;

async function token(databaseUrl: string, user: string, ...flags: string[]): Promise<string> {
  const res = await cli(['token', 'create', '--user', user, ...flags], { env: { DATABASE_URL: databaseUrl } });
  assert.equal(res.code, 0, res.stderr);
  return res.stdout.trim();
}

test('SIGTERM ends every open feed stream with end shutting-down, then the process exits 0, long before DRAIN_TIMEOUT', async (t) => {
  const { url: databaseUrl } = await testDatabase(t);
  const [alice, bob, admin] = [await token(databaseUrl, 'alice'), await token(databaseUrl, 'bob'), await token(databaseUrl, 'root', '--admin')];
  const server = await startServer(t, { DATABASE_URL: databaseUrl, DRAIN_TIMEOUT: `${DRAIN_TIMEOUT_MS / 1000}s` });
  const created = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 1, name: 'fern' }),
  });
  assert.equal(created.status, 200);
  // Streams of several users, one resumed from before the create; each has its events so far, so each is live.
  const streams = [
    await subscribe(t, server.url, { token: alice }),
    await subscribe(t, server.url, { token: alice, since: '0' }),
    await subscribe(t, server.url, { token: bob }),
    await subscribe(t, server.url, { token: admin, since: '0' }),
  ].map(({ feed }) => feed);
  assert.equal((await streams[1]!.next()).type, 'plant.created');
  assert.equal((await streams[3]!.next()).type, 'plant.created');

  /** What the test saw, in the order it saw it: each stream's end event and close, and the exit. */
  const seen: string[] = [];
  const signalled = performance.now();
  server.child.kill('SIGTERM');
  const exit = server.exited.then((code) => {
    seen.push('exit');
    return { code, ms: performance.now() - signalled };
  });
  const ended = await Promise.all(streams.map(async (feed, i) => {
    const taken = await feed.takeUntil((e) => e.type !== 'plant.created');
    const end = taken.pop()!;
    // The stream from "now" may carry fern still: on PostgreSQL the log is final only below every
    // transaction running on the database server, and another one (any database's) may have been
    // running when the stream opened. The others have had it already, or never see it.
    assert.deepEqual(taken.map((e) => e.data), i === 0 ? taken.map(() => '{"id":1,"name":"fern"}') : [], `stream ${i}`);
    assert.ok(taken.length <= 1, `stream ${i}`);
    seen.push(`end ${i}`);
    const closed = await feed.finished;
    return { end, closed, last: feed.events[feed.events.length - 1] };
  }));
  for (const [i, { end, closed, last }] of ended.entries()) {
    assert.equal(end.type, 'end', `stream ${i}: ${JSON.stringify(end)}`);
    const body = JSON.parse(end.data) as { reason: string; message: string };
    assert.equal(body.reason, 'shutting-down', `stream ${i}`);
    assert.equal(typeof body.message, 'string');
    assert.equal(last, end, `stream ${i}: the end event is the last thing on it`);
    // A process that exited, or was killed, with the stream open would cut it: this one the server ended.
    assert.equal(closed, 'ended', `stream ${i}: the server ended the response`);
  }

  const { code, ms } = await exit;
  t.diagnostic(`exited ${Math.round(ms)} ms after SIGTERM`);
  assert.equal(code, 0, server.logs());
  assert.deepEqual(seen.slice(-1), ['exit'], `the streams ended before the process exited: ${seen.join(', ')}`);
  assert.ok(ms < DRAIN_TIMEOUT_MS / 2, `exited ${Math.round(ms)} ms after SIGTERM: the streams did not hold the drain to its deadline`);
  assert.ok(!logLines(server.logs()).some((l) => /drain deadline/.test(l.msg)), 'no connection was left for the drain deadline to close');
});

test('during the drain, a stream asked for on a connection still open is ended at once and its connection closed: a client reconnecting at once cannot hold the drain', { timeout: HANG_MS }, async (t) => {
  const { url: databaseUrl } = await testDatabase(t);
  const alice = await token(databaseUrl, 'alice');
  const server = await startServer(t, { DATABASE_URL: databaseUrl, DRAIN_TIMEOUT: `${DRAIN_TIMEOUT_MS / 1000}s` });
  const { port } = new URL(server.url);
  // One keep-alive connection, on which the client asks for the stream again as soon as one ends, without
  // the retry wait: a client in a hurry, or many clients behind one proxy connection.
  const socket = connect(Number(port), '127.0.0.1');
  t.after(() => socket.destroy());
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const ask = () => socket.write(`GET /plants/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nAccept: text/event-stream\r\n\r\n`);
  const answers: string[] = [];
  let current = '';
  let opened!: () => void;
  const first = new Promise<void>((resolve) => (opened = resolve));
  socket.setEncoding('utf8').on('data', (d: string) => {
    current += d;
    if (current.includes('event: ready')) opened();
    // An answer is complete at its last chunk; the client asks again at once.
    if (!current.endsWith('\r\n0\r\n\r\n')) return;
    answers.push(current);
    current = '';
    ask();
  });
  ask();
  await first;
  const signalled = performance.now();
  server.child.kill('SIGTERM');
  await once(socket, 'close');
  const { code, ms } = await server.exited.then((c) => ({ code: c, ms: performance.now() - signalled }));
  t.diagnostic(`${answers.length} answers on the connection; exited ${Math.round(ms)} ms after SIGTERM`);
  assert.equal(code, 0);
  // The stream open at the signal, then the one asked for during the drain, which closed the connection.
  assert.equal(answers.length, 2, answers.join('\n----\n'));
  for (const answer of answers) assert.match(answer, /^HTTP\/1\.1 200 [^]*\nevent: end\ndata: \{"reason":"shutting-down"/);
  // Fastify marks every answer of a closing app so (the stream's headers, written by hand, take it over).
  assert.match(answers[1]!, /^connection: close\r$/im, 'the answer during the drain says Connection: close, as every other does');
  assert.ok(ms < DRAIN_TIMEOUT_MS / 2, `exited ${Math.round(ms)} ms after SIGTERM`);
});
