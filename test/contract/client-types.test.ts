import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as client from '@plantstore/client';
import * as compatible from 'plantstore/client';
import { clientTypes, CLIENT_TYPES_FILE } from '../../scripts/client-types.js';
import { ROOT } from '../helpers/checkout.js';

const GENERATED = 'packages/client/src/generated/openapi.ts';

test(`${GENERATED} is what npm run client:types makes of the /openapi.json the routes publish now`, async () => {
  const current = await clientTypes();
  const checkedIn = readFileSync(CLIENT_TYPES_FILE, 'utf8');
  assert.ok(checkedIn === current, `${GENERATED} is stale: the routes' schemas changed; run \`npm run client:types\` and commit it`);
});

test('import "@plantstore/client" resolves, through the workspace, to the client package\'s build and its types', () => {
  const resolved = fileURLToPath(import.meta.resolve('@plantstore/client'));
  assert.equal(resolved, join(ROOT, 'packages/client/dist/index.js'));
  assert.ok(existsSync(resolved.replace(/\.js$/, '.d.ts')), 'npm run build emits the declarations');
});

test('import "plantstore/client" still works, and is the package itself: the same classes, not a copy', () => {
  const resolved = fileURLToPath(import.meta.resolve('plantstore/client'));
  assert.equal(resolved, join(ROOT, 'dist/client.js'));
  assert.ok(existsSync(resolved.replace(/\.js$/, '.d.ts')), 'npm run build emits the declarations');
  assert.deepEqual(Object.keys(compatible).sort(), Object.keys(client).sort());
  assert.equal(compatible.PlantStore, client.PlantStore);
  assert.equal(compatible.PlantStoreError, client.PlantStoreError);
  assert.ok(new client.PlantStoreError(404, 40401, 'gone') instanceof compatible.PlantStoreError);
});
