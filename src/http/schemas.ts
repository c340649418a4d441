import type { FastifyInstance } from 'fastify';
import { Type, type TUnsafe } from 'typebox';
import { NewPlantSchema, PlantSchema } from '../domain/plant.js';
import { ERRORS, ErrorSchema, type ErrorRow } from './errors.js';
import { CreatedTokenSchema, NewTokenSchema, TokenSchema } from './token-schemas.js';
import { CreatedWebhookSchema, NewWebhookSchema, WebhookDeliverySchema, WebhookSchema } from './webhook-schemas.js';

/** The two kinds of bearer token (openapi.ts describes them): `pst_…` opaque tokens and JWT access tokens. */
export const OPAQUE_SCHEME_NAME = 'opaqueToken';
export const JWT_SCHEME_NAME = 'jwt';
/** Either kind of token will do: the security requirements are alternatives. */
export const SECURITY = [{ [OPAQUE_SCHEME_NAME]: [] }, { [JWT_SCHEME_NAME]: [] }];

/** Shared schemas, referenced by $id from routes and published under components.schemas. */
export function addSharedSchemas(app: FastifyInstance): void {
  for (const schema of [
    PlantSchema, NewPlantSchema, ErrorSchema, NewWebhookSchema, CreatedWebhookSchema, WebhookSchema, WebhookDeliverySchema,
    NewTokenSchema, CreatedTokenSchema, TokenSchema,
  ]) {
    app.addSchema(schema);
  }
}

export type SharedSchemaId =
  | 'Plant' | 'NewPlant' | 'Error' | 'NewWebhook' | 'CreatedWebhook' | 'Webhook' | 'WebhookDelivery' | 'NewToken' | 'CreatedToken' | 'Token';

export function ref<T = unknown>(id: SharedSchemaId): TUnsafe<T> {
  return Type.Unsafe<T>(Type.Ref(id));
}

/**
 * The error responses of an operation that uses the store, grouped by status, each described by the codes
 * it can carry. A malformed or too long URL (40000, 41400), an internal error (50000), a store out of
 * reach (50300) and an instance starting or shutting down (50301) can happen on any such operation, so
 * every one lists them.
 */
export function errorResponses(...rows: ErrorRow[]): Record<number, unknown> {
  const all = [ERRORS.badRequest, ERRORS.urlTooLong, ...rows, ERRORS.internal, ERRORS.storeUnavailable, ERRORS.notServing];
  const statuses = [...new Set(all.map((r) => r.status))].sort((a, b) => a - b);
  return Object.fromEntries(
    statuses.map((status) => {
      const description = all
        .filter((r) => r.status === status)
        .map((r) => `${r.code}: ${r.message}`)
        .join('; ');
      return [status, { description, ...ref('Error') }];
    }),
  );
}
