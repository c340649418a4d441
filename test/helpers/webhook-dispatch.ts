import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newEndpointId, newWebhookSecret, type WebhookEndpoint } from '../../src/domain/webhook.js';
import type { NewPlant } from '../../src/domain/plant.js';
import type { Store } from '../../src/store/store.js';
import { webhookService, type WebhookService, type WebhookServiceSettings } from '../../src/webhooks/service.js';
import { silentLogger } from './app.js';
import { eventually } from './eventually.js';
import { type Received } from './webhook-receiver.js';

/** Short everything, so that retries happen within a test. WEBHOOK_ALLOW_PRIVATE on: receivers are on loopback. */
export const SETTINGS: WebhookServiceSettings = {
  webhookTimeoutMs: 2000,
  webhookRetryScheduleMs: [200, 200, 200],
  webhookRetentionMs: 7 * 24 * 3600_000,
  webhookConcurrency: 16,
  webhookEndpointConcurrency: 4,
  webhookAllowPrivate: true,
  userAgent: 'plantstore/test',
  pollIntervalMs: 50,
};

/**
 * A started webhook worker (src/webhooks/service.ts), stopped when the test ends. Tests also stop it
 * themselves before returning: the store (opened first) closes first among the after-hooks.
 */
export function dispatcher(t: TestContext, store: Store, overrides: Partial<WebhookServiceSettings> = {}): WebhookService {
  const d = webhookService(store, { ...SETTINGS, ...overrides }, silentLogger);
  d.start();
  t.after(() => d.stop(Date.now() + 1000));
  return d;
}

export interface Registered {
  readonly endpoint: WebhookEndpoint;
  readonly secret: string;
}

export async function register(store: Store, url: string, user = 'alice', allUsers = false): Promise<Registered> {
  const secret = newWebhookSecret();
  const endpoint = await store.webhooks.createWebhook({ id: newEndpointId(), user, allUsers, url, description: null, secret }, 10);
  assert.notEqual(endpoint, 'limit');
  return { endpoint: endpoint as WebhookEndpoint, secret };
}

export async function add(store: Store, owner: string, plant: NewPlant): Promise<void> {
  assert.equal(await store.plants.createPlant(owner, plant), 'created');
}

export function verify(secret: string, request: Received): unknown {
  return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
}

/** The endpoint's attempts (newest first) once `done` says they are complete. */
export async function attempts(store: Store, endpointId: string, done: (n: number) => boolean) {
  return eventually(async () => {
    const list = await store.webhooks.listDeliveryAttempts(endpointId, null, 100);
    assert.ok(list);
    return done(list.length) ? list : undefined;
  }, 'attempts recorded');
}

/**
 * Nothing more can reach a receiver: the store holds no pending event (none left to claim or retry),
 * then the worker has stopped, its attempts in flight ended. What a test proves "is not sent" it can
 * then read from its receivers, with no window to wait out.
 */
export async function drained(store: Store, d: WebhookService): Promise<void> {
  await eventually(async () => ((await store.outbox.webhookBacklog(1000)).pending === 0 ? true : undefined), 'no event pending');
  await d.stop(Date.now() + 1000);
}
