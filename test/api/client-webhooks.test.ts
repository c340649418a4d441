import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { apiError, served } from '../helpers/client.js';
import { dispatcher } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

// The client's webhook operations against a real server (helpers/client.ts), delivered by a real dispatcher.

test('the client changes an endpoint, sends a test event, rotates its secret, resends and recovers events', async (t) => {
  const rx = await receiver(t);
  const fixture = await served(t, { webhookAllowPrivate: true });
  const worker = dispatcher(t, fixture.store);
  const token = await fixture.token('alice');
  const alice = fixture.client(token);
  const registered = await fetch(`${fixture.url}/webhooks`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://x.example/' }),
  });
  const { id, secret } = await registered.json() as { id: string; secret: string };

  const changed = await alice.updateWebhook(id, { url: rx.url, description: 'via the client' });
  assert.deepEqual([changed.id, changed.url, changed.description, changed.disabledAt], [id, rx.url, 'via the client', undefined]);

  const eventId = await alice.sendWebhookTestEvent(id);
  assert.match(eventId, /^msg_[0-9a-f]{32}$/);
  const [got] = await rx.waitFor(1);
  assert.equal(got?.headers['webhook-id'], eventId);
  new Webhook(secret).verify(got?.body ?? '', got?.headers as Record<string, string>);

  const rotated = await alice.rotateWebhookSecret(id, { overlap: '1h' });
  assert.match(rotated.secret, /^whsec_/);
  assert.ok(Date.parse(rotated.previousSecretExpiresAt) > Date.now() + 3_500_000);
  await alice.resendWebhookEvent(id, eventId);
  const again = (await rx.waitFor(2))[1];
  assert.equal(again?.headers['webhook-id'], eventId);
  for (const s of [secret, rotated.secret]) new Webhook(s).verify(again?.body ?? '', again?.headers as Record<string, string>);

  await eventually(async () => ((await fixture.store.outbox.webhookBacklog(10)).pending === 0 ? true : undefined));
  assert.equal(await alice.recoverWebhookEvents(id, new Date(Date.now() - 60_000)), 0);
  assert.equal(await alice.recoverWebhookEvents(id, '2020-01-01T00:00:00Z'), 0);

  const disabled = await alice.updateWebhook(id, { enabled: false });
  assert.equal(disabled.disabledReason, 'disabled by alice');
  await apiError(alice.sendWebhookTestEvent(id), { status: 409, error: 40902 });
  await apiError(alice.resendWebhookEvent(id, 'msg_000000000000aaaaaaaaaaaaaaaaaaaa'), { status: 409, error: 40902 });
  await alice.updateWebhook(id, { enabled: true });
  await apiError(alice.resendWebhookEvent(id, 'msg_000000000000aaaaaaaaaaaaaaaaaaaa'), { status: 404, error: 40404 });
  await apiError(alice.recoverWebhookEvents(id, 'yesterday'), { status: 400, error: 40008 });
  await apiError(alice.rotateWebhookSecret(id, { overlap: '8d' }), { status: 400, error: 40008 });
  await apiError(alice.updateWebhook(id, { url: 'ftp://x.example/' }), { status: 400, error: 40005 });
  // Another user's endpoint is not found, whatever the operation.
  const bob = fixture.client(await fixture.token('bob'));
  await apiError(bob.updateWebhook(id, { description: 'mine' }), { status: 404, error: 40402 });
  await apiError(bob.rotateWebhookSecret(id), { status: 404, error: 40402 });
  await apiError(bob.sendWebhookTestEvent(id), { status: 404, error: 40402 });
  await apiError(bob.recoverWebhookEvents(id, new Date()), { status: 404, error: 40402 });
  await apiError(bob.resendWebhookEvent(id, eventId), { status: 404, error: 40402 });
  await worker.stop(Date.now() + 1000);
});
