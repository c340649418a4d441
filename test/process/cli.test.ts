import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REVOCATION_WITHIN_MS } from '../../src/domain/token.js';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { runCli, startServer } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';

// What only a real process shows: the exit code the shell sees, set by bin/plantstore.js from what main
// returns, and a command working beside a running server process. The commands' output and refusals
// are tested in-process, in test/cli/.

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

test('the shell sees 0 for success, 2 for a mistake in the command and 1 for a failure, with the message on stderr', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const version = await runCli(['--version']);
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout, /^plantstore \S+\n$/);
  const usage = await runCli([]);
  assert.equal(usage.code, 2);
  assert.match(usage.stdout, /Usage: plantstore <command>/);
  const unknown = await runCli(['frobnicate']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /^plantstore: unknown command "frobnicate"/);
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const failed = await runCli(['token', 'revoke', '999'], env);
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /plantstore: no active token with ID 999\n$/);
});

test('the CLI works while the server runs, and a revocation reaches the server within 5 seconds', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const server = await startServer(t, env);
  const secret = lastLine((await cli(['token', 'create', '--user', 'alice'], { env })).stdout);
  const get = () => fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${secret}` } });
  // The server caches the token from this first use on: its refusal is due a cache lifetime after it.
  const cachedAt = Date.now();
  assert.equal((await get()).status, 200);
  assert.equal((await cli(['token', 'revoke', '1'], { env })).code, 0);
  // The server refuses the token as soon as its cache lets the revocation through, which is the promise's
  // bound at the latest: asked until then, not slept through.
  const res = await eventually(async () => {
    const answer = await get();
    if (answer.status === 200) return void (await answer.body?.cancel());
    return answer;
  }, 'the revocation reaching the server');
  // Past the promise's bound by no more than one request takes, with room for a loaded machine.
  const after = Date.now() - cachedAt;
  assert.ok(after <= REVOCATION_WITHIN_MS + 1000, `refused ${after} ms after the token was cached`);
  assert.equal(res.status, 401);
  assert.equal(((await res.json()) as { error: number }).error, 40101);
  assert.equal(await server.stop(), 0);
});
