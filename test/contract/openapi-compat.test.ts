import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testApp } from '../helpers/app.js';

/**
 * A client generated from the published Plant Store document must work against this server, and one
 * generated from our document must look like it. What such a client relies on, said in our own words:
 *
 * - GET /plants with an optional query parameter `limit` (integer, int32), answering 200 with an array of
 *   Plant; POST /plants with a required NewPlant body, answering 200 with a Plant; DELETE /plants/{id}
 *   with a required path parameter `id` (integer, int64), answering 204. Each answers 400 with an Error.
 *   Every call carries a bearer token (an HTTP bearer scheme).
 * - A webhook /plant/webhook: a POST whose body is a NewPlant, answered 200.
 * - The schemas by name: Plant (name: string, required; tag: string), NewPlant (a Plant with id: integer,
 *   int64, required) and Error (error: integer, int32; message: string; both required).
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  allOf?: Schema[];
  items?: Schema;
};
type Parameter = { name: string; in: string; required?: boolean; schema: Schema };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  security?: Array<Record<string, string[]>>;
};
type Document = {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  security?: Array<Record<string, string[]>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, { type: string; scheme?: string }> };
};

async function ourDocument(t: Parameters<typeof testApp>[0]): Promise<Document> {
  const { app } = await testApp(t);
  return (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Document;
}

/** The name a schema reference points at under components.schemas. */
const refName = (schema: Schema | undefined): string | undefined => /^#\/components\/schemas\/(.+)$/.exec(schema?.$ref ?? '')?.[1];

/** A schema's properties and required fields, with allOf parts (the published NewPlant is one) merged in. */
function flattened(doc: Document, schema: Schema): { properties: Record<string, Schema>; required: Set<string> } {
  const name = refName(schema);
  const resolved = name === undefined ? schema : doc.components.schemas[name];
  assert.ok(resolved, `schema ${schema.$ref} exists`);
  const result = { properties: { ...resolved.properties }, required: new Set(resolved.required) };
  for (const part of resolved.allOf ?? []) {
    const merged = flattened(doc, part);
    Object.assign(result.properties, merged.properties);
    for (const field of merged.required) result.required.add(field);
  }
  return result;
}

const json = (op: Operation | undefined, status: string): Schema | undefined => op?.responses[status]?.content?.['application/json']?.schema;

test('GET /plants, POST /plants and DELETE /plants/{id} take what a client of the published document sends', async (t) => {
  const doc = await ourDocument(t);
  const list = doc.paths['/plants']?.get;
  const create = doc.paths['/plants']?.post;
  const remove = doc.paths['/plants/{id}']?.delete;
  assert.ok(list && create && remove, 'the three published operations, at the published paths');

  const limit = list.parameters?.find((p) => p.name === 'limit');
  assert.deepEqual([limit?.in, limit?.required ?? false, limit?.schema.type, limit?.schema.format], ['query', false, 'integer', 'int32']);
  const id = remove.parameters?.find((p) => p.name === 'id');
  assert.deepEqual([id?.in, id?.required, id?.schema.type, id?.schema.format], ['path', true, 'integer', 'int64']);
  // Nothing else is required of a caller: such a client sends only the published parameters.
  for (const [name, op] of [['GET /plants', list], ['POST /plants', create], ['DELETE /plants/{id}', remove]] as const) {
    const required = (op.parameters ?? []).filter((p) => p.required).map((p) => p.name);
    assert.deepEqual(required, name === 'DELETE /plants/{id}' ? ['id'] : [], name);
  }
  assert.equal(create.requestBody?.required, true);
  assert.equal(refName(create.requestBody?.content['application/json']?.schema), 'NewPlant');
});

test('the published operations answer what a client of the published document reads: Plant, [Plant], 204, Error on 400', async (t) => {
  const doc = await ourDocument(t);
  const list = doc.paths['/plants']?.get;
  const create = doc.paths['/plants']?.post;
  const remove = doc.paths['/plants/{id}']?.delete;
  const listed = json(list, '200');
  assert.equal(listed?.type, 'array');
  assert.equal(refName(listed?.items), 'Plant');
  assert.equal(refName(json(create, '200')), 'Plant');
  assert.ok(remove?.responses['204'], 'DELETE answers 204');
  for (const op of [list, create, remove]) assert.equal(refName(json(op, '400')), 'Error');

  // Every call carries a bearer token: each operation asks for one, and every way it accepts is HTTP bearer.
  for (const op of [list, create, remove]) {
    const requirements = op?.security ?? doc.security ?? [];
    assert.ok(requirements.length > 0);
    for (const requirement of requirements) {
      for (const scheme of Object.keys(requirement)) {
        assert.deepEqual([doc.components.securitySchemes[scheme]?.type, doc.components.securitySchemes[scheme]?.scheme], ['http', 'bearer']);
      }
    }
  }
});

test('Plant, NewPlant and Error have the published names, required fields and types', async (t) => {
  const doc = await ourDocument(t);
  const typeOf = (schema: Schema | undefined) => [schema?.type, schema?.format].filter(Boolean).join(' ');
  const shape = (name: string) => {
    const { properties, required } = flattened(doc, { $ref: `#/components/schemas/${name}` });
    return {
      required: [...required].sort(),
      types: Object.fromEntries(Object.entries(properties).map(([key, schema]) => [key, typeOf(schema)]).sort()),
    };
  };
  assert.deepEqual(shape('Plant'), { required: ['name'], types: { name: 'string', tag: 'string' } });
  assert.deepEqual(shape('NewPlant'), { required: ['id', 'name'], types: { id: 'integer int64', name: 'string', tag: 'string' } });
  assert.deepEqual(shape('Error'), { required: ['error', 'message'], types: { error: 'integer int32', message: 'string' } });
});

test('the /plant/webhook webhook posts a NewPlant and expects 200, as published', async (t) => {
  const doc = await ourDocument(t);
  const hook = doc.webhooks['/plant/webhook']?.post;
  assert.ok(hook);
  assert.equal(refName(hook.requestBody?.content['application/json']?.schema), 'NewPlant');
  assert.ok(hook.responses['200']);
});
