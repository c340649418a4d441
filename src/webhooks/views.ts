import type { DeliveryAttempt, WebhookDeliveryView, WebhookEndpoint, WebhookView } from '../domain/webhook.js';

// What GET /webhooks and GET /webhooks/{id}/deliveries answer (and `webhook deliveries --json` prints),
// without loading the HTTP stack: the CLI uses them too. Absent values are left out, never null.

/** An endpoint as listed: never its secret. */
export function webhookView(endpoint: WebhookEndpoint): WebhookView {
  const view: WebhookView = {
    id: endpoint.id,
    user: endpoint.user,
    allUsers: endpoint.allUsers,
    url: endpoint.url,
    createdAt: endpoint.createdAt.toISOString(),
  };
  if (endpoint.description !== null) view.description = endpoint.description;
  if (endpoint.disabledAt !== null) view.disabledAt = endpoint.disabledAt.toISOString();
  if (endpoint.disabledReason !== null) view.disabledReason = endpoint.disabledReason;
  return view;
}

/** An attempt as listed; nextAttemptAt only while the event is pending. */
export function deliveryView(attempt: DeliveryAttempt): WebhookDeliveryView {
  const view: WebhookDeliveryView = {
    eventId: attempt.eventId,
    plantId: attempt.plantId,
    attempt: attempt.attempt,
    status: attempt.status,
    at: attempt.at.toISOString(),
    state: attempt.state,
  };
  if (attempt.error !== null) view.error = attempt.error;
  if (attempt.state === 'pending' && attempt.nextAttemptAt !== null) view.nextAttemptAt = attempt.nextAttemptAt.toISOString();
  if (attempt.test) view.test = true;
  return view;
}

