import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = ReturnType<ReturnType<SerializerFactory>>;

/** The JSON text of a schema (schemas are JSON), or undefined for a value JSON cannot hold (a bigint). */
export function jsonKey(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/**
 * Fastify's own serializer builder (fast-json-stringify), building each distinct response schema once
 * per app instead of once per route and status. Most responses of most routes are the same few `Error`
 * references, and every build also re-checks every shared schema the scope holds, so building each
 * once saves most of an app's construction. A serializer is a pure function of its schema, the scope's
 * shared schemas and the options, which the key holds; the same text gives the same function as a build
 * would. One cache per call: per app, never shared between apps.
 */
export function dedupingSerializers(): SerializerFactory {
  const build = SerializerSelector();
  // By the scope's key (its shared schemas and the options), then by the response schema's.
  const scopes = new Map<string, Map<string, Serializer>>();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    const scope = jsonKey([externalSchemas, options ?? null]);
    if (scope === undefined) return compile;
    let built = scopes.get(scope);
    if (built === undefined) scopes.set(scope, (built = new Map()));
    const known = built;
    return (route) => {
      const key = jsonKey(route.schema);
      if (key === undefined) return compile(route);
      let serializer = known.get(key);
      if (serializer === undefined) {
        serializer = compile(route);
        known.set(key, serializer);
      }
      return serializer;
    };
  };
}
