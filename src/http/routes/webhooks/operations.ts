import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EVENT_ID_PATTERN } from '../../../domain/webhook.js';
import type { Store, WebhookOperationResult } from '../../../store/store.js';
import {
  DEFAULT_SECRET_OVERLAP, OVERLAP_RULE, parseOverlap, parseRfc3339, rotateWebhookSecret, SINCE_RULE, updateWebhook,
} from '../../../webhooks/operations.js';
import { WebhookRequestError } from '../../../webhooks/register.js';
import { webhookView } from '../../../webhooks/views.js';
import { requireScope, type AuthSteps } from '../../auth/index.js';
import { ApiError, ERRORS } from '../../errors.js';
import { AUTHENTICATION_ERRORS, BODY_ERRORS, errorResponses, OPTIONAL_BODY, ref, SECURITY, TAG } from '../../schemas.js';
import { ENDPOINT_ID, EndpointParams, ownerOf, refusal } from './endpoint.js';
import {
  QueuedWebhookEventSchema, RecoveredWebhookEventsSchema, RotatedWebhookSecretSchema, WebhookRecoverySchema, WebhookSchema,
  WebhookSecretRotationSchema, WebhookUpdateSchema,
  type RotatedWebhookSecret, type WebhookRecoveryBody, type WebhookSecretRotationBody, type WebhookUpdateBody,
} from './schemas.js';

const EventParams = Type.Object({
  id: EndpointParams.properties.id,
  eventId: Type.String({ description: 'The event id (msg_…): its webhook-id header, as GET /webhooks/{id}/deliveries shows it' }),
});

/** What an operation on the events of an endpoint answers when nothing was queued: unknown, disabled, or the bound. */
function settled<T>(result: WebhookOperationResult<T>): T {
  if (typeof result === 'object' && result !== null && 'refused' in result) {
    if (result.refused === 'queue-full') {
      const { pending, adding, max } = result;
      throw new ApiError(
        ERRORS.webhookQueueFull,
        `${ERRORS.webhookQueueFull.message}: ${pending} queued now, ${adding} more would pass ${max}`,
      );
    }
    throw new ApiError(result.refused === 'disabled' ? ERRORS.webhookDisabled : ERRORS.webhookNotFound);
  }
  return result;
}

/** An invalid operation body: its row, saying which field and why. */
const invalidOperation = (field: string, rule: string) => new ApiError(ERRORS.invalidWebhookOperation, `${ERRORS.invalidWebhookOperation.message}: ${field} ${rule}`);

export interface WebhookOperationRoutesOptions {
  readonly store: Store;
  readonly auth: AuthSteps;
  /** WEBHOOK_ALLOW_PRIVATE: a new URL passes the rules registration applies. */
  readonly allowPrivate: boolean;
  /** WEBHOOK_MAX_QUEUED_PER_USER: test, resend and recover queue nothing past it (409 40903). */
  readonly maxQueuedPerUser: number;
}

/**
 * What can be done to one endpoint after it is made, as payment providers offer it: change it (URL,
 * description, enabled), send an event again, send every failed event since a time again, rotate its
 * secret, send a test event. Same scope and the same visibility as the other /webhooks routes: the
 * caller's own endpoints, an admin's any, 404 otherwise. What is queued goes through the outbox and the
 * dispatcher, as every event does.
 */
export const webhookOperationRoutes: FastifyPluginAsyncTypebox<WebhookOperationRoutesOptions> = async (app, { store, auth, allowPrivate, maxQueuedPerUser }) => {
  const guard = [...auth.identify, requireScope('webhooks:manage'), ...auth.throttle];
  const described = { tags: [TAG.webhooks], security: SECURITY };

  app.patch(
    '/webhooks/:id',
    {
      onRequest: guard,
      config: { invalidBody: ERRORS.invalidWebhook },
      schema: {
        ...described,
        summary: 'Change a webhook endpoint',
        operationId: 'updateWebhook',
        description:
          'Changes the URL (checked as at registration), the description, or whether it is enabled. Attempts claimed after the answer use ' +
          'the new URL. `enabled: true` enables an endpoint disabled by a 410 or by hand; `enabled: false` disables it and fails its ' +
          'pending events. Events created while it is disabled are never queued for it.',
        params: EndpointParams,
        body: ref<WebhookUpdateBody>(WebhookUpdateSchema),
        response: {
          200: { description: 'The endpoint as changed', ...ref(WebhookSchema) },
          ...errorResponses(...BODY_ERRORS, ERRORS.invalidWebhook, ERRORS.privateDestination, ...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { principal } = request;
      if (!ENDPOINT_ID.test(id)) throw new ApiError(ERRORS.webhookNotFound);
      const updated = await updateWebhook(store, id, ownerOf(principal), request.body, principal.user, allowPrivate).catch((error: unknown) => {
        throw error instanceof WebhookRequestError ? refusal(error) : error;
      });
      if (updated === null) throw new ApiError(ERRORS.webhookNotFound);
      return webhookView(updated);
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:eventId/resend',
    {
      onRequest: guard,
      schema: {
        ...described,
        summary: 'Send an event again',
        operationId: 'resendWebhookEvent',
        description:
          'Queues a delivered or failed event again, with the same webhook-id (receivers deduplicate by it), due now and with a full retry ' +
          'schedule; a pending one is made due now. Its earlier attempts stay in the history. No body. Refused with 40903 when the ' +
          'endpoint\'s user already has WEBHOOK_MAX_QUEUED_PER_USER events queued by test, resend and recover.',
        params: EventParams,
        response: {
          202: { description: 'Queued', ...ref(QueuedWebhookEventSchema) },
          ...errorResponses(
            ...BODY_ERRORS, ...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound, ERRORS.webhookEventNotFound, ERRORS.webhookDisabled,
            ERRORS.webhookQueueFull,
          ),
        },
      },
    },
    async (request, reply) => {
      const { id, eventId } = request.params;
      if (!ENDPOINT_ID.test(id)) throw new ApiError(ERRORS.webhookNotFound);
      // An id of another form names no event; the endpoint is still looked up, for its own 404.
      const result = settled(await store.webhooks.resendWebhookEvent(id, ownerOf(request.principal), EVENT_ID_PATTERN.test(eventId) ? eventId : '', maxQueuedPerUser));
      if (result === 'no-event') throw new ApiError(ERRORS.webhookEventNotFound);
      return reply.code(202).send({ eventId });
    },
  );

  app.post(
    '/webhooks/:id/recover',
    {
      onRequest: guard,
      config: { invalidBody: ERRORS.invalidWebhookOperation },
      schema: {
        ...described,
        summary: 'Send failed events again',
        operationId: 'recoverWebhookEvents',
        description:
          'Queues again every failed event of the endpoint created at or after `since` (and still kept: WEBHOOK_RETENTION), oldest first, ' +
          'each with its webhook-id and a full retry schedule: after a receiver was down. All of them or none: when they would take the ' +
          'endpoint\'s user past WEBHOOK_MAX_QUEUED_PER_USER events queued by test, resend and recover, nothing is queued (40903, saying ' +
          'how many are queued and how many more this would queue); a later `since` recovers fewer.',
        params: EndpointParams,
        body: ref<WebhookRecoveryBody>(WebhookRecoverySchema),
        response: {
          202: { description: 'Queued', ...ref(RecoveredWebhookEventsSchema) },
          ...errorResponses(
            ...BODY_ERRORS, ERRORS.invalidWebhookOperation, ...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound, ERRORS.webhookDisabled,
            ERRORS.webhookQueueFull,
          ),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const since = parseRfc3339(request.body.since);
      if (since === null) throw invalidOperation('since', SINCE_RULE);
      if (!ENDPOINT_ID.test(id)) throw new ApiError(ERRORS.webhookNotFound);
      const queued = settled(await store.webhooks.recoverWebhookEvents(id, ownerOf(request.principal), since, maxQueuedPerUser));
      return reply.code(202).send({ queued });
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      onRequest: guard,
      // The body may be left out: validated as the empty object it stands for (ajv refuses undefined). Only
      // left out: a JSON null is a body, which the schema refuses as recover and PATCH refuse it.
      preValidation: (request: { body: unknown }, _reply: unknown, done: () => void) => {
        if (request.body === undefined) request.body = {};
        done();
      },
      config: { invalidBody: ERRORS.invalidWebhookOperation },
      schema: {
        ...described,
        summary: 'Rotate an endpoint\'s signing secret',
        [OPTIONAL_BODY]: true,
        operationId: 'rotateWebhookSecret',
        description:
          'Gives the endpoint a new secret, shown in this answer only. Until `previousSecretExpiresAt` (the overlap), every delivery carries ' +
          'two signatures, `v1,<new> v1,<old>`, so that a receiver can switch keys without missing an event; after it, only the new one.',
        params: EndpointParams,
        body: ref<WebhookSecretRotationBody>(WebhookSecretRotationSchema),
        response: {
          200: { description: 'Rotated; the new secret is in this answer only', ...ref(RotatedWebhookSecretSchema) },
          ...errorResponses(...BODY_ERRORS, ERRORS.invalidWebhookOperation, ...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const overlapMs = parseOverlap(request.body.overlap ?? DEFAULT_SECRET_OVERLAP);
      if (overlapMs === null) throw invalidOperation('overlap', OVERLAP_RULE);
      const rotated = ENDPOINT_ID.test(id) ? await rotateWebhookSecret(store, id, ownerOf(request.principal), overlapMs) : null;
      if (rotated === null) throw new ApiError(ERRORS.webhookNotFound);
      const answer: RotatedWebhookSecret = { secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt.toISOString() };
      return answer;
    },
  );

  app.post(
    '/webhooks/:id/test',
    {
      onRequest: guard,
      schema: {
        ...described,
        summary: 'Send a test event',
        operationId: 'sendWebhookTestEvent',
        description:
          'Queues a test event for this endpoint alone: signed as any other, with the header `webhook-test: true` and the body ' +
          '`{"id":0,"name":"plantstore test event","tag":"test"}`; no plant is created. It shows in the endpoint\'s deliveries. No body. ' +
          'Refused with 40903 when the endpoint\'s user already has WEBHOOK_MAX_QUEUED_PER_USER events queued by test, resend and recover.',
        params: EndpointParams,
        response: {
          202: { description: 'Queued', ...ref(QueuedWebhookEventSchema) },
          ...errorResponses(...BODY_ERRORS, ...AUTHENTICATION_ERRORS, ERRORS.webhookNotFound, ERRORS.webhookDisabled, ERRORS.webhookQueueFull),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (!ENDPOINT_ID.test(id)) throw new ApiError(ERRORS.webhookNotFound);
      const eventId = settled(await store.webhooks.queueTestEvent(id, ownerOf(request.principal), maxQueuedPerUser));
      return reply.code(202).send({ eventId });
    },
  );
};
