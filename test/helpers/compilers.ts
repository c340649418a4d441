import AjvCompiler from '@fastify/ajv-compiler';
import type { SchemaCompilers } from '../../src/app.js';
import { dedupingSerializers } from '../../src/http/serializers.js';

/**
 * One pair of Fastify's own schema builders for the apps of a test file (AppOptions.schemaCompilers):
 * each Ajv instance, with the JSON Schema meta-schema it compiles, and each serializer is built once for
 * the file rather than once per app, which was most of what building an app cost. Validators and
 * serializers are pure functions of their schemas and options (Ajv instances are pooled by both), so
 * every answer is the one an app's own builders give.
 */
export function sharedSchemaCompilers(): SchemaCompilers {
  const validators = AjvCompiler();
  const buildValidator: AjvCompiler.BuildCompilerFromPool = (externalSchemas, options) => {
    const compile = validators(externalSchemas, options);
    // Fastify hands a validator compiler the route's definition, though the type names a schema.
    return (definition) => {
      const route = definition as unknown as AjvCompiler.RouteDefinition;
      // Given a validator builder, Fastify compiles a headers schema as written; with its own, it lowercases
      // the header names first (as request.headers has them). No route has one: the first must be tested as
      // a server runs it, so it fails here rather than pass on a difference.
      if (route.httpPart === 'headers') throw new Error(`${route.method} ${route.url}: a headers schema needs Fastify's own validator builder`);
      return compile(definition);
    };
  };
  return { buildSerializer: dedupingSerializers(), buildValidator };
}
