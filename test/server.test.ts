import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testDatabase } from './helpers.js';
import { runCli, startServer } from './process.js';

test('a server process keeps every acknowledged plant across a restart, and exits 0 on SIGTERM and SIGINT', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const secret = (await runCli(['token', 'create', '--user', 'alice'], env)).stdout.trim();
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };

  const first = await startServer(t, env);
  for (let i = 1; i <= 20; i++) {
    const res = await fetch(`${first.url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id: i, name: `p${i}` }) });
    assert.equal(res.status, 200);
  }
  assert.equal(await first.stop('SIGTERM'), 0);
  assert.match(first.logs(), /"signal":"SIGTERM","msg":"shutting down"/);

  const second = await startServer(t, env);
  const res = await fetch(`${second.url}/plants?limit=1000`, { headers });
  assert.deepEqual(((await res.json()) as Array<{ name: string }>).map((p) => p.name), Array.from({ length: 20 }, (_, i) => `p${i + 1}`));
  assert.equal(await second.stop('SIGINT'), 0);
});

test('SIGTERM lets in-flight requests finish before the process exits', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const secret = (await runCli(['token', 'create', '--user', 'alice'], env)).stdout.trim();
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const server = await startServer(t, env);

  // SIGTERM goes out when the first create is answered, so the others are in flight at that moment.
  let signalled: Promise<number | null> | undefined;
  const inFlight = Array.from({ length: 50 }, (_, i) =>
    fetch(`${server.url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id: i, name: `p${i}` }) }).then(
      (r) => {
        signalled ??= server.stop('SIGTERM');
        return r.status;
      },
      () => 'refused' as const,
    ),
  );
  const statuses = await Promise.all(inFlight);
  assert.equal(await signalled, 0);
  // Each request either was answered 200 (and is stored) or never got a connection; none hangs.
  assert.ok(statuses.every((s) => s === 200 || s === 'refused'), JSON.stringify(statuses));
  const acknowledged = statuses.flatMap((s, i) => (s === 200 ? [i] : []));
  assert.ok(acknowledged.length >= 1);

  const again = await startServer(t, env);
  const stored = (await (await fetch(`${again.url}/plants?limit=1000`, { headers })).json()) as Array<{ name: string }>;
  for (const i of acknowledged) assert.ok(stored.some((p) => p.name === `p${i}`), `acknowledged p${i} kept`);
  assert.equal(await again.stop(), 0);
});
