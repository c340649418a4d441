import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
// The server process reads these settings from its environment; the commands themselves are tested
// in-process, in test/cli/webhooks.test.ts.

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

test('a served API reads WEBHOOK_ALLOW_PRIVATE and WEBHOOK_MAX_PER_USER from the environment; the CLI sees what it registers', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const token = lastLine((await cli(['token', 'create', '--user', 'alice'], { env })).stdout);
  const register = (url: string, server: string) => fetch(`${server}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });

  const strict = await startServer(t, env);
  const refused = await register('http://127.0.0.1:9/hook', strict.url);
  assert.equal(refused.status, 400);
  assert.equal(((await refused.json()) as { error: number }).error, 40006);
  assert.equal(await strict.stop(), 0);

  const open = await startServer(t, { ...env, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_MAX_PER_USER: '1' });
  const created = await register('http://127.0.0.1:9/hook', open.url);
  assert.equal(created.status, 201);
  const { id, secret } = (await created.json()) as { id: string; secret: string };
  assert.match(secret, SECRET);
  const over = await register('http://127.0.0.1:9/other', open.url);
  assert.equal(over.status, 409);
  assert.equal(((await over.json()) as { error: number }).error, 40901);
  assert.equal(await open.stop(), 0);
  assert.ok(!open.logs().includes(secret), 'the secret is never logged');

  const listed = JSON.parse((await cli(['webhook', 'list', '--json'], { env })).stdout);
  assert.deepEqual(listed.map((e: { id: string; url: string }) => [e.id, e.url]), [[id, 'http://127.0.0.1:9/hook']]);
});
