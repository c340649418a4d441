import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { json, serveWithMetrics, token, value } from '../helpers/metrics.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

// What the webhook operations queue goes where every event goes: into the outbox (so a kill -9 loses
// none) and through the dispatcher (so the attempts metrics count it), in real server processes.

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';
const endpointId = (stderr: string) => /Created webhook endpoint (ep_[A-Za-z0-9_-]{22})/.exec(stderr)?.[1] ?? '';

test('a test event and its resend are counted in the delivery attempts metric', async (t) => {
  const hook = await receiver(t);
  const run = await serveWithMetrics(t);
  const secret = await token(run.db, 'alice');
  const registered = await fetch(`${run.api}/webhooks`, { method: 'POST', headers: json(secret), body: JSON.stringify({ url: hook.url }) });
  const { id } = await registered.json() as { id: string };
  const queued = await fetch(`${run.api}/webhooks/${id}/test`, { method: 'POST', headers: { authorization: `Bearer ${secret}` } });
  assert.equal(queued.status, 202);
  const { eventId } = await queued.json() as { eventId: string };
  await hook.waitFor(1);
  const resent = await fetch(`${run.api}/webhooks/${id}/deliveries/${eventId}/resend`, { method: 'POST', headers: { authorization: `Bearer ${secret}` } });
  assert.equal(resent.status, 202);
  await hook.waitFor(2);
  await eventually(async () => {
    const samples = await run.scrape();
    return value(samples, 'plantstore_webhook_delivery_attempts_total', { result: 'delivered' }) === 2 &&
      value(samples, 'plantstore_webhook_pending_events') === 0 ? true : undefined;
  }, 'both attempts to be counted');
});

test('a test event survives kill -9 of the server that queued it, and the next server delivers it with its id', async (t) => {
  const db = await testDatabase(t);
  const rx = await receiver(t);
  await rx.close();
  // A retry 5 s after the refused first attempt: the kill comes before it is claimed again.
  const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_TIMEOUT: '1s', WEBHOOK_RETRY_SCHEDULE: '5s,5s' };
  const id = endpointId((await cli(['webhook', 'add', '--user', 'alice', '--url', rx.url], { env })).stderr);
  const token = lastLine((await cli(['token', 'create', '--user', 'alice'], { env })).stdout);
  const first = await startServer(t, env);
  const headers = { authorization: `Bearer ${token}` };
  const queued = await fetch(`${first.url}/webhooks/${id}/test`, { method: 'POST', headers });
  assert.equal(queued.status, 202);
  const { eventId } = await queued.json() as { eventId: string };
  await eventually(async () => {
    const attempts = await (await fetch(`${first.url}/webhooks/${id}/deliveries`, { headers })).json() as { state: string }[];
    return attempts.length === 1 && attempts[0]?.state === 'pending' ? true : undefined;
  }, 'the refused first attempt to be recorded');
  await first.stop('SIGKILL');
  await rx.reopen();
  const second = await startServer(t, env);
  const [got] = await rx.waitFor(1, 20_000);
  assert.equal(got?.headers['webhook-id'], eventId);
  assert.equal(got?.headers['webhook-test'], 'true');
  assert.equal(await second.stop(), 0);
});
