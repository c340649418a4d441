import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERROR_ROWS, ERRORS } from '../../src/http/errors.js';
import { errorTableMarkdown } from '../../src/http/openapi.js';
import { testApp } from '../helpers/app.js';

interface Operation {
  operationId: string;
  tags: string[];
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description: string }>;
}

const TOKEN = [{ opaqueToken: [] }, { jwt: [] }];

/**
 * Every operation: its operationId, tag, who may call it, and every status it can answer. The statuses
 * any request can get (400 malformed, 408 too slow, 414 URL too long, 417 Expect, 431 headers too large,
 * 500) are on every one; 503 on those that use the store; 413 and 415 where a body is read (a DELETE's
 * too: Fastify reads one if it is sent). Each is produced by a real request in errors.test.ts.
 */
const OPERATIONS: Record<string, { operationId: string; tag: string; security: unknown; statuses: string[] }> = {
  'POST /plants': {
    operationId: 'createPlant', tag: 'plants', security: TOKEN,
    statuses: ['200', '400', '401', '403', '408', '409', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'GET /plants': {
    operationId: 'listPlants', tag: 'plants', security: TOKEN,
    statuses: ['200', '400', '401', '403', '408', '414', '417', '429', '431', '500', '503'],
  },
  // A stream: no body is read; 410 for a resume point the feed no longer keeps, 429 and 503 for its limits too.
  'GET /plants/events': {
    operationId: 'watchPlants', tag: 'plants', security: TOKEN,
    statuses: ['200', '400', '401', '403', '408', '410', '414', '417', '429', '431', '500', '503'],
  },
  'DELETE /plants/{id}': {
    operationId: 'deletePlant', tag: 'plants', security: TOKEN,
    statuses: ['204', '400', '401', '403', '404', '408', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'POST /webhooks': {
    operationId: 'createWebhook', tag: 'webhooks', security: TOKEN,
    statuses: ['201', '400', '401', '403', '408', '409', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'GET /webhooks': {
    operationId: 'listWebhooks', tag: 'webhooks', security: TOKEN,
    statuses: ['200', '400', '401', '403', '408', '414', '417', '429', '431', '500', '503'],
  },
  'DELETE /webhooks/{id}': {
    operationId: 'deleteWebhook', tag: 'webhooks', security: TOKEN,
    statuses: ['204', '400', '401', '403', '404', '408', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'GET /webhooks/{id}/deliveries': {
    operationId: 'listWebhookDeliveries', tag: 'webhooks', security: TOKEN,
    statuses: ['200', '400', '401', '403', '404', '408', '414', '417', '429', '431', '500', '503'],
  },
  'PATCH /webhooks/{id}': {
    operationId: 'updateWebhook', tag: 'webhooks', security: TOKEN,
    statuses: ['200', '400', '401', '403', '404', '408', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'POST /webhooks/{id}/deliveries/{eventId}/resend': {
    operationId: 'resendWebhookEvent', tag: 'webhooks', security: TOKEN,
    statuses: ['202', '400', '401', '403', '404', '408', '409', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'POST /webhooks/{id}/recover': {
    operationId: 'recoverWebhookEvents', tag: 'webhooks', security: TOKEN,
    statuses: ['202', '400', '401', '403', '404', '408', '409', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'POST /webhooks/{id}/rotate-secret': {
    operationId: 'rotateWebhookSecret', tag: 'webhooks', security: TOKEN,
    statuses: ['200', '400', '401', '403', '404', '408', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'POST /webhooks/{id}/test': {
    operationId: 'sendWebhookTestEvent', tag: 'webhooks', security: TOKEN,
    statuses: ['202', '400', '401', '403', '404', '408', '409', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  // No scope is needed on /tokens: 403 only for POST, whose caller must be admin.
  'POST /tokens': {
    operationId: 'createToken', tag: 'tokens', security: TOKEN,
    statuses: ['201', '400', '401', '403', '408', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'GET /tokens': {
    operationId: 'listTokens', tag: 'tokens', security: TOKEN,
    statuses: ['200', '400', '401', '408', '414', '417', '429', '431', '500', '503'],
  },
  'DELETE /tokens/{id}': {
    operationId: 'revokeToken', tag: 'tokens', security: TOKEN,
    statuses: ['204', '400', '401', '404', '408', '413', '414', '415', '417', '429', '431', '500', '503'],
  },
  'GET /healthz': { operationId: 'getLiveness', tag: 'operations', security: [], statuses: ['200', '400', '408', '414', '417', '431', '500', '503'] },
  'GET /readyz': { operationId: 'getReadiness', tag: 'operations', security: [], statuses: ['200', '400', '408', '414', '417', '431', '500', '503'] },
  'GET /openapi.json': { operationId: 'getOpenApi', tag: 'document', security: [], statuses: ['200', '400', '408', '414', '417', '431', '500', '503'] },
};

test('GET /openapi.json needs no token and describes the API as OpenAPI 3.1, version 1.0.0', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  assert.equal(res.body, JSON.stringify(app.swagger()), 'served as it is, every property kept');
  const doc = res.json();
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '1.0.0');
  assert.deepEqual(doc.info.license, { name: 'MIT', identifier: 'MIT' });
  assert.deepEqual(doc.servers, [{ url: '/', description: 'This server' }]);
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['jwt', 'opaqueToken']);
  for (const scheme of Object.values(doc.components.securitySchemes) as Array<{ type: string; scheme: string }>) {
    assert.equal(scheme.type, 'http');
    assert.equal(scheme.scheme, 'bearer');
  }
  assert.deepEqual(Object.keys(doc.paths).sort(), [
    '/healthz', '/openapi.json', '/plants', '/plants/events', '/plants/{id}', '/readyz', '/tokens', '/tokens/{id}', '/webhooks', '/webhooks/{id}',
    '/webhooks/{id}/deliveries', '/webhooks/{id}/deliveries/{eventId}/resend', '/webhooks/{id}/recover', '/webhooks/{id}/rotate-secret',
    '/webhooks/{id}/test',
  ]);

  const documented = Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as const),
  );
  assert.deepEqual(documented.map(([name]) => name).sort(), Object.keys(OPERATIONS).sort());
  for (const [name, op] of documented) {
    const expected = OPERATIONS[name];
    assert.ok(expected, name);
    assert.equal(op.operationId, expected.operationId, name);
    assert.deepEqual(op.tags, [expected.tag], name);
    assert.deepEqual(op.security, expected.security, name);
    assert.deepEqual(Object.keys(op.responses).sort(), expected.statuses, name);
    assert.match(op.responses['417']?.description ?? '', /^41700: /, name);
    assert.match(op.responses['431']?.description ?? '', /^43100: /, name);
    assert.match(op.responses['408']?.description ?? '', /^40800: /, name);
    assert.match(op.responses['503']?.description ?? '', /50303: /, name);
    if (expected.security === TOKEN) {
      assert.match(op.responses['429']?.description ?? '', /42900.*42901/, name);
      assert.match(op.responses['503']?.description ?? '', /^50300: .*; 50301: .*; 50302: /, name);
    }
    if (op.responses['413']) assert.match(op.responses['400']?.description ?? '', /40001/, `${name}: a body that is not JSON`);
  }
  const byName = Object.fromEntries(documented);
  assert.match(byName['POST /plants']?.responses['409']?.description ?? '', /40900/);
  assert.equal(
    byName['GET /readyz']?.responses['503']?.description,
    '50300: The store is unavailable; retry shortly; 50301: This instance is starting or shutting down; retry (another instance); ' +
      `50303: ${ERRORS.tooManyConnections.message}`,
  );
  const operationIds = documented.map(([, op]) => op.operationId);
  assert.equal(new Set(operationIds).size, operationIds.length, 'operationIds are unique');

  assert.deepEqual(doc.tags.map((tag: { name: string }) => tag.name), ['plants', 'webhooks', 'tokens', 'operations', 'document']);
  for (const tag of doc.tags) assert.ok(tag.description, tag.name);
  const document = doc.paths['/openapi.json'].get.responses['200'].content['application/json'].schema;
  assert.equal(document.type, 'object');

  const limit = doc.paths['/plants'].get.parameters.find((p: { name: string }) => p.name === 'limit');
  assert.deepEqual(limit.schema, { type: 'integer', format: 'int32', minimum: 1, maximum: 1000, default: 100 });
  assert.equal(limit.required, false);
  const [id] = doc.paths['/plants/{id}'].delete.parameters;
  assert.deepEqual([id.name, id.in, id.required, id.schema.type, id.schema.format], ['id', 'path', true, 'integer', 'int64']);
  assert.equal(doc.components.schemas.NewPlant.properties.id.format, 'int64');
  assert.deepEqual(Object.keys(doc.components.schemas.Plant.properties).sort(), ['name', 'tag']);
});

test('the /webhooks operations document their bodies, error codes and scope; never a secret in a listing', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const { schemas } = doc.components;
  const post = doc.paths['/webhooks'].post;
  assert.equal(post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/NewWebhook');
  assert.equal(post.responses['201'].content['application/json'].schema.$ref, '#/components/schemas/CreatedWebhook');
  assert.match(post.responses['400'].description, /40005.*40006/);
  assert.match(post.responses['409'].description, /40901/);
  assert.match(doc.paths['/webhooks/{id}'].delete.responses['404'].description, /40402/);
  assert.match(doc.paths['/webhooks/{id}/deliveries'].get.responses['400'].description, /40003/);
  assert.match(doc.components.securitySchemes.opaqueToken.description, /webhooks:manage/);
  assert.deepEqual(schemas.NewWebhook.required, ['url']);
  assert.equal(schemas.NewWebhook.properties.url.maxLength, 2048);
  assert.equal(schemas.NewWebhook.properties.description.maxLength, 500);
  assert.deepEqual(Object.keys(schemas.CreatedWebhook.properties).sort(), ['createdAt', 'description', 'id', 'secret', 'url']);
  assert.equal(schemas.Webhook.properties.secret, undefined);
  assert.equal(schemas.Webhook.additionalProperties, false);
  const items = doc.paths['/webhooks'].get.responses['200'].content['application/json'].schema;
  assert.equal(items.type, 'array');
  assert.equal(items.items.$ref, '#/components/schemas/Webhook');
  assert.deepEqual(schemas.WebhookDelivery.properties.plantId, { type: 'integer', format: 'int64', description: 'The new plant\'s id, exact' });
  assert.deepEqual(schemas.WebhookDelivery.properties.status.type, ['integer', 'null']);
  assert.deepEqual(schemas.WebhookDelivery.properties.state.enum, ['pending', 'delivered', 'failed']);
  const limit = doc.paths['/webhooks/{id}/deliveries'].get.parameters.find((p: { name: string }) => p.name === 'limit');
  assert.deepEqual(limit.schema, { type: 'integer', minimum: 1, maximum: 1000, default: 50 });
});

test('the two bearer schemes say what each token is: pst_… from the CLI or POST /tokens, or a JWT with its settings and scopes', async (t) => {
  const { app } = await testApp(t);
  const { opaqueToken, jwt } = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().components.securitySchemes;
  assert.equal(opaqueToken.bearerFormat, 'pst_…');
  assert.match(opaqueToken.description, /token create.*POST \/tokens/);
  assert.equal(jwt.bearerFormat, 'JWT');
  for (const word of ['JWT_ISSUER', 'JWT_JWKS_URL', 'JWT_AUDIENCE', 'JWT_USER_CLAIM', 'plants:read', 'plants:write', 'webhooks:manage', 'plants:admin']) {
    assert.ok(jwt.description.includes(word), word);
  }
});

test('the /tokens operations document their bodies and error codes; never a secret nor a hash in a listing', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const { schemas } = doc.components;
  const post = doc.paths['/tokens'].post;
  assert.equal(post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/NewToken');
  assert.equal(post.responses['201'].content['application/json'].schema.$ref, '#/components/schemas/CreatedToken');
  assert.match(post.responses['400'].description, /40001.*40007/);
  assert.match(post.responses['403'].description, /40301/);
  assert.doesNotMatch(post.responses['403'].description, /40300/);
  assert.match(doc.paths['/tokens/{id}'].delete.responses['404'].description, /40403/);
  assert.deepEqual(schemas.NewToken.required, ['user']);
  assert.deepEqual(Object.keys(schemas.NewToken.properties).sort(), ['admin', 'expiresIn', 'name', 'scopes', 'user']);
  assert.deepEqual(schemas.NewToken.properties.scopes.items.enum, ['plants:read', 'plants:write', 'webhooks:manage']);
  // The one duration grammar: 0 alone, or a whole number (0 included, no leading zeros) and a unit.
  assert.equal(schemas.NewToken.properties.expiresIn.pattern, '^(?:0|(?:0|[1-9]\\d{0,5})[smhd])$');
  const recordKeys = ['admin', 'createdAt', 'expiresAt', 'id', 'name', 'revokedAt', 'scopes', 'status', 'user'];
  assert.deepEqual(Object.keys(schemas.Token.properties).sort(), recordKeys);
  assert.equal(schemas.Token.additionalProperties, false);
  assert.deepEqual(Object.keys(schemas.CreatedToken.properties).sort(), [...recordKeys, 'secret'].sort());
  assert.equal(schemas.CreatedToken.additionalProperties, false);
  const items = doc.paths['/tokens'].get.responses['200'].content['application/json'].schema;
  assert.equal(items.type, 'array');
  assert.equal(items.items.$ref, '#/components/schemas/Token');
});

test('the webhooks section declares /plant/webhook as the published document does, with the signature headers (and a test event\'s)', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  assert.deepEqual(Object.keys(doc.webhooks), ['/plant/webhook']);
  const hook = doc.webhooks['/plant/webhook'];
  assert.deepEqual(Object.keys(hook), ['post']);
  assert.equal(hook.post.description, 'Information about a new plant added to the store');
  assert.equal(hook.post.operationId, 'plantAdded');
  assert.deepEqual(hook.post.security, [], 'the receiver needs no token of ours: the signature authenticates the call');
  assert.deepEqual(hook.post.requestBody.content, { 'application/json': { schema: { $ref: '#/components/schemas/NewPlant' } } });
  assert.deepEqual(hook.post.responses, { 200: { description: 'Return a 200 status to indicate that the data was received successfully' } });
  const headers = hook.post.parameters.map((p: { name: string; in: string; required: boolean }) => `${p.in}:${p.name}:${p.required}`);
  assert.deepEqual(headers, [
    'header:webhook-id:true', 'header:webhook-timestamp:true', 'header:webhook-signature:true', 'header:webhook-test:false',
  ]);
  // The reference resolves.
  assert.ok(doc.components.schemas.NewPlant);
});

test('the OpenAPI document carries the whole error table, in the Error schema, and a description of a few lines', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  assert.deepEqual(doc.components.schemas.Error.properties.error.enum, ERROR_ROWS.map((r) => r.code));
  const table: string = doc.components.schemas.Error.description;
  assert.ok(table.includes(errorTableMarkdown()));
  const statuses = new Set(ERROR_ROWS.map((r) => String(r.status)));
  for (const status of statuses) assert.match(table, new RegExp(`\\| ${status} \\|`), status);
  // /docs shows info.description above Authorize and the operations: what the API is and how to authorize, no table.
  assert.ok(!doc.info.description.includes('| error |'), 'the table is not in info.description');
  assert.ok(doc.info.description.split('\n').length <= 6, doc.info.description);
  assert.match(doc.info.description, /Authorization: Bearer/);
});
