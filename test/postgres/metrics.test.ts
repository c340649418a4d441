import assert from 'node:assert/strict';
import { test } from 'node:test';
import { has, parse, value } from '../helpers/metrics.js';
import { spawnServer } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';

test('until the store opens, the metrics answer with store_up 0 and no backlog', async (t) => {
  // Nothing listens on this port: the server waits for its database, listening, with metrics on.
  const server = spawnServer(t, {
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', DATABASE_STARTUP_TIMEOUT: '60s', METRICS_PORT: '0',
  });
  await server.listening;
  t.after(() => server.stop());
  const metrics = await eventually(() => /"metrics":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.logs())?.[1], 'the metrics line');
  const samples = parse(await (await fetch(metrics)).text());
  assert.equal(value(samples, 'plantstore_store_up'), 0);
  assert.equal(value(samples, 'plantstore_build_info', { backend: 'postgres' }), 1);
  assert.equal(has(samples, 'plantstore_webhook_pending_events'), false);
});
