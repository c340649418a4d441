import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';

test('a server process keeps every acknowledged plant across a restart, and exits 0 on SIGTERM and SIGINT', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const secret = (await cli(['token', 'create', '--user', 'alice'], { env })).stdout.trim();
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
