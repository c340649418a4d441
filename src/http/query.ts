import type { FastifyInstance, preValidationHookHandler } from 'fastify';

const DECIMAL = /^\d{1,15}$/;

/**
 * Query strings carry only text. With ajv's coercion off (see app.ts), integer parameters are converted
 * here, and only from plain decimal digits: ajv's own coercion would also take "0x10", " 5" or "1e2".
 * Anything else stays a string and fails the schema's `type: integer` with a 400.
 */
export function strictQueryIntegers(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const properties = (route.schema?.querystring as { properties?: Record<string, { type?: unknown }> } | undefined)
      ?.properties;
    const integers = Object.entries(properties ?? {})
      .filter(([, schema]) => schema.type === 'integer')
      .map(([name]) => name);
    if (integers.length === 0) return;
    const coerce: preValidationHookHandler = (request, _reply, done) => {
      const query = request.query as Record<string, unknown>;
      for (const name of integers) {
        const value = query[name];
        if (typeof value === 'string' && DECIMAL.test(value)) query[name] = Number(value);
      }
      done();
    };
    route.preValidation = [coerce, ...[route.preValidation ?? []].flat()];
  });
}
