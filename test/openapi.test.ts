import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERROR_ROWS } from '../src/http/errors.js';
import { errorTableMarkdown } from '../src/http/openapi.js';
import { testApp } from './helpers.js';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description: string }>;
}

test('GET /openapi.json needs no token and describes the API as OpenAPI 3.1, version 1.0.0', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  const doc = res.json();
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '1.0.0');
  assert.equal(doc.components.securitySchemes.bearerAuth.type, 'http');
  assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer');
  assert.deepEqual(Object.keys(doc.paths).sort(), ['/healthz', '/plants', '/plants/{id}', '/readyz']);

  const operations: Record<string, Operation> = {
    'POST /plants': doc.paths['/plants'].post,
    'GET /plants': doc.paths['/plants'].get,
    'DELETE /plants/{id}': doc.paths['/plants/{id}'].delete,
  };
  const expected: Record<string, string[]> = {
    'POST /plants': ['200', '400', '401', '403', '409', '413', '414', '415', '429', '500', '503'],
    'GET /plants': ['200', '400', '401', '403', '414', '429', '500', '503'],
    'DELETE /plants/{id}': ['204', '400', '401', '403', '404', '414', '429', '500', '503'],
  };
  for (const [name, op] of Object.entries(operations)) {
    assert.deepEqual(op.security, [{ bearerAuth: [] }], name);
    assert.deepEqual(Object.keys(op.responses).sort(), expected[name], name);
  }
  assert.match(operations['POST /plants']?.responses['409']?.description ?? '', /40900/);
  assert.match(operations['GET /plants']?.responses['503']?.description ?? '', /50300/);
  assert.match(operations['GET /plants']?.responses['503']?.description ?? '', /50301/);
  for (const op of Object.values(operations)) assert.match(op.responses['429']?.description ?? '', /42900.*42901|42901.*42900/);
  assert.equal(doc.paths['/healthz'].get.security, undefined, 'health checks need no token');
  assert.deepEqual(Object.keys(doc.paths['/readyz'].get.responses).sort(), ['200', '400', '414', '500', '503']);
  const limit = doc.paths['/plants'].get.parameters.find((p: { name: string }) => p.name === 'limit');
  assert.deepEqual(limit.schema, { type: 'integer', minimum: 1, maximum: 1000, default: 100 });
  assert.equal(limit.required, false);
  assert.equal(doc.components.schemas.NewPlant.properties.id.format, 'int64');
  assert.deepEqual(Object.keys(doc.components.schemas.Plant.properties).sort(), ['name', 'tag']);
});

test('the OpenAPI document carries the whole error table', async (t) => {
  const { app } = await testApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  assert.deepEqual(doc.components.schemas.Error.properties.error.enum, ERROR_ROWS.map((r) => r.code));
  assert.ok(doc.info.description.includes(errorTableMarkdown()));
  const statuses = new Set(ERROR_ROWS.map((r) => String(r.status)));
  for (const status of statuses) assert.match(doc.info.description, new RegExp(`\\| ${status} \\|`), status);
});
