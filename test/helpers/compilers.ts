import AjvCompiler from '@fastify/ajv-compiler';
import type { SchemaCompilers } from '../../src/app.js';
import { dedupingSerializers, jsonKey } from '../../src/http/serializers.js';

type Validate = ReturnType<ReturnType<AjvCompiler.BuildCompilerFromPool>>;

/**
 * One pair of Fastify's own schema builders for the apps of a test file (AppOptions.schemaCompilers):
 * each Ajv instance, with the JSON Schema meta-schema it compiles, each validator and each serializer
 * is built once for the file rather than once per app, which was most of what building an app cost.
 * Validators and serializers are pure functions of their schemas and options (Ajv instances are pooled
 * by both, and so are the validators here, by their JSON text), so every answer is the one an app's own
 * builders give.
 */
export function sharedSchemaCompilers(): SchemaCompilers {
  const validators = AjvCompiler();
  // By the pool's key (the scope's shared schemas and Ajv's options), then by the route schema's.
  const pools = new Map<string, Map<string, Validate>>();
  const buildValidator: AjvCompiler.BuildCompilerFromPool = (externalSchemas, options) => {
    const compile = validators(externalSchemas, options);
    const pool = jsonKey([externalSchemas, options?.customOptions ?? null]);
    let built = pool === undefined ? undefined : pools.get(pool);
    if (pool !== undefined && built === undefined) pools.set(pool, (built = new Map()));
    // Fastify hands a validator compiler the route's definition, though the type names a schema.
    return (definition) => {
      const route = definition as unknown as AjvCompiler.RouteDefinition;
      // Given a validator builder, Fastify compiles a headers schema as written; with its own, it lowercases
      // the header names first (as request.headers has them). No route has one: the first must be tested as
      // a server runs it, so it fails here rather than pass on a difference.
      if (route.httpPart === 'headers') throw new Error(`${route.method} ${route.url}: a headers schema needs Fastify's own validator builder`);
      const key = jsonKey(route.schema);
      if (built === undefined || key === undefined) return compile(definition);
      let validate = built.get(key);
      if (validate === undefined) {
        validate = compile(definition);
        built.set(key, validate);
      }
      return validate;
    };
  };
  return { buildSerializer: dedupingSerializers(), buildValidator };
}
