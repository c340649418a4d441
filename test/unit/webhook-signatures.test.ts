import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, type ClaimedDelivery } from '../../src/domain/webhook.js';
import { signatures } from '../../src/webhooks/sender.js';

// The webhook-signature header of an attempt during and after a rotated secret's overlap, checked with the
// Standard Webhooks library: the end of the overlap holds at the moment of signing, whatever the claim read.

const current = newWebhookSecret();
const previous = newWebhookSecret();
const delivery = (expiresAt: Date | null): ClaimedDelivery => ({
  seq: 1, eventId: 'msg_0123456789abcdef0123456789abcdef', endpointId: 'ep_x', user: 'alice', url: 'https://hooks.example/',
  secret: current, previousSecret: expiresAt === null ? null : previous, previousSecretExpiresAt: expiresAt,
  plantId: 1n, body: '{"id":1,"name":"a"}', attempt: 1, roundStart: 0, test: false,
});

function verifies(secret: string, d: ClaimedDelivery, header: string, timestamp: number): boolean {
  try {
    new Webhook(secret).verify(d.body, { 'webhook-id': d.eventId, 'webhook-timestamp': String(timestamp), 'webhook-signature': header });
    return true;
  } catch {
    return false;
  }
}

test('during the overlap: two space-separated signatures, the new one first, each verifying with its secret', () => {
  const now = Date.now();
  const timestamp = Math.floor(now / 1000);
  const d = delivery(new Date(now + 60_000));
  const header = signatures(d, timestamp, now);
  const parts = header.split(' ');
  assert.equal(parts.length, 2);
  assert.ok(parts.every((p) => /^v1,[A-Za-z0-9+/]{43}=$/.test(p)));
  assert.equal(parts[0], signatures(delivery(null), timestamp, now), 'the new secret\'s first');
  assert.ok(verifies(current, d, header, timestamp));
  assert.ok(verifies(previous, d, header, timestamp));
});

test('past the overlap\'s end at signing time (a claim made during it): the new signature only', () => {
  const now = Date.now();
  const timestamp = Math.floor(now / 1000);
  for (const d of [delivery(new Date(now)), delivery(new Date(now - 1)), delivery(null)]) {
    const header = signatures(d, timestamp, now);
    assert.equal(header.split(' ').length, 1);
    assert.ok(verifies(current, d, header, timestamp));
    assert.ok(!verifies(previous, d, header, timestamp));
  }
});
