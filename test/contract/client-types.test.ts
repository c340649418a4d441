import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { clientTypes, CLIENT_TYPES_FILE } from '../../scripts/client-types.js';

test('src/client/openapi.ts is what npm run client:types makes of the /openapi.json the routes publish now', async () => {
  const current = await clientTypes();
  const checkedIn = readFileSync(CLIENT_TYPES_FILE, 'utf8');
  assert.ok(checkedIn === current, 'src/client/openapi.ts is stale: the routes\' schemas changed; run `npm run client:types` and commit it');
});

test('import "plantstore/client" resolves, by package.json "exports", to the built client and its types', () => {
  const resolved = fileURLToPath(import.meta.resolve('plantstore/client'));
  assert.equal(resolved, fileURLToPath(new URL('../../dist/client/index.js', import.meta.url)));
  assert.ok(existsSync(resolved.replace(/\.js$/, '.d.ts')), 'npm run build emits the declarations');
});

test('the client carries no server code: its modules import only one another', () => {
  const dir = new URL('../../src/client/', import.meta.url);
  for (const file of readdirSync(dir)) {
    const source = readFileSync(new URL(file, dir), 'utf8');
    const specifiers = [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]);
    for (const specifier of specifiers) assert.match(specifier ?? '', /^\.\/[a-z-]+\.js$/, `${file} imports ${specifier}`);
    assert.doesNotMatch(source, /\bprocess\.|\bBuffer\b|\brequire\(/, `${file} uses a Node.js global`);
  }
});
