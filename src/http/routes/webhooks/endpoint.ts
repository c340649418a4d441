import { Type } from 'typebox';
import type { Principal } from '../../../domain/principal.js';
import { ENDPOINT_ID_PREFIX } from '../../../domain/webhook.js';
import { WebhookRequestError } from '../../../webhooks/register.js';
import { ApiError, ERRORS, type ErrorRow } from '../../errors.js';

// What the /webhooks routes and the operations on one endpoint (operations.ts) share.

/** What newEndpointId makes. Any other id names no endpoint, and is answered 404 without asking the store. */
export const ENDPOINT_ID = new RegExp(`^${ENDPOINT_ID_PREFIX}[A-Za-z0-9_-]{22}$`);

export const EndpointParams = Type.Object({
  // No constraint here: a schema failure on a path parameter would be answered 40004 (a plant id); an id
  // that cannot exist is simply not found (404 40402).
  id: Type.String({ description: 'The endpoint id (ep_…), as POST /webhooks or GET /webhooks gave it' }),
});

const BY_KIND: Record<WebhookRequestError['kind'], ErrorRow> = {
  invalid: ERRORS.invalidWebhook,
  private: ERRORS.privateDestination,
  limit: ERRORS.webhookLimit,
};

/** A refused registration as its error row; a private destination's row says it all. */
export function refusal(error: WebhookRequestError): ApiError {
  const row = BY_KIND[error.kind];
  return new ApiError(row, error.kind === 'private' ? row.message : `${row.message}: ${error.message}`);
}

/**
 * Whose endpoints a caller sees and acts on: its user's, or, for an admin token, everyone's. An admin
 * lists every endpoint, so it may also read their deliveries and remove them (an operator cleaning up
 * a dead receiver); unlike plants, which an admin lists but deletes only its own.
 */
export const ownerOf = (principal: Principal): string | null => (principal.admin ? null : principal.user);

