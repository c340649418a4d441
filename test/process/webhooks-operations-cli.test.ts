import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';
import { receiver } from '../helpers/webhook-receiver.js';

// The webhook operations from the CLI (webhook update, resend, recover, rotate-secret, test), against a
// real store, with a real server delivering what they queue.

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';
const endpointId = (stderr: string) => /Created webhook endpoint (ep_[A-Za-z0-9_-]{22})/.exec(stderr)?.[1] ?? '';

test('webhook test, rotate-secret, resend and recover queue through the outbox; a running server delivers them, signed', async (t) => {
  const db = await testDatabase(t);
  const rx = await receiver(t);
  const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'on' };
  const added = await cli(['webhook', 'add', '--user', 'alice', '--url', rx.url], { env });
  assert.equal(added.code, 0, added.stderr);
  const id = endpointId(added.stderr);
  const first = lastLine(added.stdout);
  const server = await startServer(t, env);

  const sent = await cli(['webhook', 'test', id], { env });
  assert.equal(sent.code, 0, sent.stderr);
  const eventId = lastLine(sent.stdout);
  assert.match(eventId, /^msg_[0-9a-f]{32}$/);
  const [got] = await rx.waitFor(1);
  assert.equal(got?.headers['webhook-id'], eventId);
  assert.equal(got?.headers['webhook-test'], 'true');
  new Webhook(first).verify(got?.body ?? '', got?.headers as Record<string, string>);

  const rotated = await cli(['webhook', 'rotate-secret', id, '--overlap', '1h'], { env });
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, /^whsec_\S+\n$/, 'the new secret alone on stdout');
  const next = lastLine(rotated.stdout);
  assert.match(next, SECRET);
  assert.match(rotated.stderr, /also signs until \d{4}-\d\d-\d\dT/);

  // The test event sent again, with its webhook-id, signed by both secrets now.
  const resent = await cli(['webhook', 'resend', id, eventId], { env });
  assert.equal(resent.code, 0, resent.stderr);
  const again = (await rx.waitFor(2))[1];
  assert.equal(again?.headers['webhook-id'], eventId);
  for (const secret of [first, next]) new Webhook(secret).verify(again?.body ?? '', again?.headers as Record<string, string>);

  // Nothing failed: recover queues none.
  const recovered = await cli(['webhook', 'recover', id, '--since', '2020-01-01T00:00:00Z'], { env });
  assert.equal(recovered.code, 0, recovered.stderr);
  assert.match(recovered.stdout, /^Queued 0 failed events of webhook endpoint/);
  assert.equal(await server.stop(), 0);
});

