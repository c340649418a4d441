import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Store } from '../../../store/store.js';
import { registerWebhook, WebhookRequestError, type WebhookSettings } from '../../../webhooks/register.js';
import { deliveryView, webhookView } from '../../../webhooks/views.js';
import { requireScope, type AuthSteps } from '../../auth/index.js';
import { ApiError, ERRORS } from '../../errors.js';
import { AUTHENTICATION_ERRORS, BODY_ERRORS, errorResponses, ref, SECURITY, TAG } from '../../schemas.js';
import { ENDPOINT_ID, EndpointParams, ownerOf, refusal } from './endpoint.js';
import { webhookOperationRoutes } from './operations.js';
import {
  CreatedWebhookSchema, NewWebhookSchema, WEBHOOK_SCHEMAS, WebhookDeliverySchema, WebhookSchema, type CreatedWebhook, type NewWebhookBody,
} from './schemas.js';

const DELIVERIES_DEFAULT = 50;
const DELIVERIES_MAX = 1000;

const DeliveriesQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: DELIVERIES_MAX, default: DELIVERIES_DEFAULT, description: 'Maximum number of attempts to return' }),
  ),
});

export interface WebhookRoutesOptions {
  readonly store: Store;
  /** The app's authentication steps (shared with the plant routes: one token cache). */
  readonly auth: AuthSteps;
  readonly settings: WebhookSettings;
  /** WEBHOOK_MAX_QUEUED_PER_USER: what test, resend and recover may have queued for one user. */
  readonly maxQueuedPerUser: number;
  /** Told of each endpoint removed, once the store has removed it (see PluginOptions.onWebhookDeleted). */
  readonly onDeleted?: ((endpointId: string) => void) | undefined;
}

/**
 * Subscribing: register, list and remove webhook endpoints, and read their delivery attempts. Every
 * route needs the webhooks:manage scope. Delivery itself is src/webhooks/ (the dispatcher).
 */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, { store, auth, settings, maxQueuedPerUser, onDeleted }) => {
  // This scope's schemas, before any route of it (operations.ts's included) names them.
  for (const schema of WEBHOOK_SCHEMAS) app.addSchema(schema);
  const guard = [...auth.identify, requireScope('webhooks:manage'), ...auth.throttle];

  app.post(
    '/webhooks',
    {
      onRequest: guard,
      config: { invalidBody: ERRORS.invalidWebhook },
      schema: {
        summary: 'Register a webhook endpoint',
        operationId: 'createWebhook',
        tags: [TAG.webhooks],
        description:
          'The endpoint receives a POST for every plant its user creates (registered with an admin token: every user\'s, while its user ' +
          'holds an active admin token), signed with ' +
          'Standard Webhooks headers (see the `webhooks` section). The answer carries the signing secret, shown this once.',
        security: SECURITY,
        body: ref<NewWebhookBody>(NewWebhookSchema),
        response: {
          201: { description: 'Registered; the secret is in this answer only', ...ref(CreatedWebhookSchema) },
          ...errorResponses(
            ...BODY_ERRORS, ERRORS.invalidWebhook, ERRORS.privateDestination, ...AUTHENTICATION_ERRORS, ERRORS.webhookLimit,
          ),
        },
      },
    },
    async (request, reply) => {
      const { principal } = request;
      const { url, description } = request.body;
      // An admin's endpoint receives every user's new plants.
      const { endpoint, secret } = await registerWebhook(
        store, { user: principal.user, allUsers: principal.admin, url, description }, settings,
      ).catch((error: unknown) => {
        throw error instanceof WebhookRequestError ? refusal(error) : error;
      });
      const created: CreatedWebhook = { id: endpoint.id, url: endpoint.url, secret, createdAt: endpoint.createdAt.toISOString() };
      if (endpoint.description !== null) created.description = endpoint.description;
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/webhooks',
    {
      onRequest: guard,
      schema: {
        summary: 'List webhook endpoints',
        operationId: 'listWebhooks',
        tags: [TAG.webhooks],
        description: 'The caller\'s endpoints (an admin token: every user\'s), in registration order, never with their secrets.',
        security: SECURITY,
        response: {
          200: { description: 'The endpoints', ...Type.Array(ref(WebhookSchema)) },
          ...errorResponses(...AUTHENTICATION_ERRORS),
        },
      },
    },
    async (request) => (await store.webhooks.listWebhooks(ownerOf(request.principal))).map(webhookView),
  );

  app.delete(
    '/webhooks/:id',
    {
      onRequest: guard,
      schema: {
        summary: 'Remove a webhook endpoint',
        operationId: 'deleteWebhook',
        tags: [TAG.webhooks],
        description:
          'Removes the endpoint with its queued events and its delivery history; no attempt starts after the answer. An admin token may ' +
          'remove any user\'s endpoint.',
        security: SECURITY,
        params: EndpointParams,
        response: {
          204: { description: 'Removed', type: 'null' },
          ...errorResponses(...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound, ...BODY_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (!ENDPOINT_ID.test(id) || !(await store.webhooks.deleteWebhook(id, ownerOf(request.principal)))) throw new ApiError(ERRORS.webhookNotFound);
      onDeleted?.(id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      onRequest: guard,
      schema: {
        summary: 'List an endpoint\'s delivery attempts',
        operationId: 'listWebhookDeliveries',
        tags: [TAG.webhooks],
        description:
          'The latest attempts to deliver events to this endpoint, newest first (kept WEBHOOK_RETENTION after their event is delivered or ' +
          'failed). An admin token may read any user\'s endpoint; any other token sees only its own user\'s plants among them.',
        security: SECURITY,
        params: EndpointParams,
        querystring: DeliveriesQuery,
        response: {
          200: { description: 'Attempts, newest first', ...Type.Array(ref(WebhookDeliverySchema)) },
          ...errorResponses(ERRORS.invalidQuery, ...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      // ajv has filled in the default; the type cannot know it.
      const { limit = DELIVERIES_DEFAULT } = request.query;
      const attempts = ENDPOINT_ID.test(id) ? await store.webhooks.listDeliveryAttempts(id, ownerOf(request.principal), limit) : null;
      if (attempts === null) throw new ApiError(ERRORS.webhookNotFound);
      return attempts.map(deliveryView);
    },
  );
  await app.register(webhookOperationRoutes, { store, auth, allowPrivate: settings.allowPrivate, maxQueuedPerUser });
};
