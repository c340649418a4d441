import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/open.js';
import { silentLogger, testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';

// The webhook operations from the CLI (webhook update, resend, recover, rotate-secret, test), in-process
// against a real store; test/process/webhooks-operations-cli.test.ts has a real server deliver what they queue.

const endpointId = (stderr: string) => /Created webhook endpoint (ep_[A-Za-z0-9_-]{22})/.exec(stderr)?.[1] ?? '';

test('webhook update changes the URL (with the registration rules), disables and enables; list shows it', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const id = endpointId((await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://hooks.example/a'], { env })).stderr);
  const moved = await cli(['webhook', 'update', id, '--url', 'https://moved.example/b', '--description', 'moved'], { env });
  assert.equal(moved.code, 0, moved.stderr);
  assert.match(moved.stdout, new RegExp(`^Updated webhook endpoint ${id}: https://moved\\.example/b \\(active\\)\\n$`));
  const off = await cli(['webhook', 'update', id, '--disable'], { env });
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /\(disabled \S+Z \(disabled by an operator \(CLI\)\)\)/);
  const [listed] = JSON.parse((await cli(['webhook', 'list', '--json'], { env })).stdout);
  assert.deepEqual([listed.url, listed.description, listed.disabledReason], ['https://moved.example/b', 'moved', 'disabled by an operator (CLI)']);
  const disabledTest = await cli(['webhook', 'test', id], { env });
  assert.equal(disabledTest.code, 1);
  assert.match(disabledTest.stderr, /is disabled: enable it first/);
  const on = await cli(['webhook', 'update', id, '--enable'], { env });
  assert.match(on.stdout, /\(active\)/);
  // A private address is refused as at registration, unless WEBHOOK_ALLOW_PRIVATE=on.
  const refused = await cli(['webhook', 'update', id, '--url', 'http://127.0.0.1:9/'], { env });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /WEBHOOK_ALLOW_PRIVATE=on allows it/);
  assert.equal((await cli(['webhook', 'update', id, '--url', 'http://127.0.0.1:9/'], { env: { ...env, WEBHOOK_ALLOW_PRIVATE: 'on' } })).code, 0);
});

test('webhook operations: usage mistakes exit 2, unknown ids 1; each has --help', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const id = endpointId((await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://hooks.example/a'], { env })).stderr);
  for (const [args, message] of [
    [['webhook', 'update', id], /needs something to change/],
    [['webhook', 'update', id, '--enable', '--disable'], /--enable or --disable, not both/],
    [['webhook', 'update'], /needs one endpoint ID/],
    [['webhook', 'resend', id], /needs an endpoint ID and an EVENT_ID/],
    [['webhook', 'recover', id], /needs --since TIME/],
    [['webhook', 'recover', id, '--since', 'yesterday'], /--since must be an RFC 3339 date-time/],
    [['webhook', 'rotate-secret', id, '--overlap', '8d'], /--overlap must be 0 or a duration/],
    [['webhook', 'rotate-secret', id, '--overlap', '169h'], /--overlap must be 0 or a duration/],
    [['webhook', 'rotate-secret', id, '--overlap', '00s'], /--overlap must be 0 or a duration/],
    [['webhook', 'test'], /needs one endpoint ID/],
  ] as const) {
    const res = await cli([...args], { env });
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, message, args.join(' '));
  }
  // A zero overlap in any unit is none at all, as 0 is.
  for (const overlap of ['0', '0s', '0d']) {
    const rotated = await cli(['webhook', 'rotate-secret', id, '--overlap', overlap], { env });
    assert.equal(rotated.code, 0, `${overlap}: ${rotated.stderr}`);
    assert.match(rotated.stderr, /the replaced one signs no more/, overlap);
  }
  for (const args of [['update', 'ep_AAAAAAAAAAAAAAAAAAAAAA', '--enable'], ['test', 'ep_AAAAAAAAAAAAAAAAAAAAAA'],
    ['rotate-secret', 'ep_AAAAAAAAAAAAAAAAAAAAAA'], ['recover', 'ep_AAAAAAAAAAAAAAAAAAAAAA', '--since', '2020-01-01T00:00:00Z']]) {
    const res = await cli(['webhook', ...args], { env });
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, /no webhook endpoint with ID ep_A/);
  }
  const noEvent = await cli(['webhook', 'resend', id, 'msg_000000000000aaaaaaaaaaaaaaaaaaaa'], { env });
  assert.equal(noEvent.code, 1);
  assert.match(noEvent.stderr, /has no event msg_0+a+ it still receives/);
  for (const command of ['update', 'resend', 'recover', 'rotate-secret', 'test']) {
    const help = await cli(['webhook', command, '--help'], { env });
    assert.equal(help.code, 0);
    assert.match(help.stdout, new RegExp(`plantstore webhook ${command} ID`));
  }
  const main = await cli(['--help']);
  for (const command of ['update', 'resend', 'recover', 'rotate-secret', 'test']) assert.match(main.stdout, new RegExp(`webhook ${command} `));
});

test('webhook test is not held to WEBHOOK_MAX_QUEUED_PER_USER (the operator\'s), but what it queues counts against the user', async (t) => {
  const db = await testDatabase(t);
  const env = { DATABASE_URL: db.url, WEBHOOK_MAX_QUEUED_PER_USER: '1' };
  const added = await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://hooks.example/plants'], { env });
  assert.equal(added.code, 0, added.stderr);
  const id = endpointId(added.stderr);
  for (let i = 0; i < 2; i++) {
    const queued = await cli(['webhook', 'test', id], { env });
    assert.equal(queued.code, 0, queued.stderr);
  }
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000 });
  t.after(() => store.close());
  assert.deepEqual(await store.webhooks.queueTestEvent(id, 'alice', 2), { refused: 'queue-full', pending: 2, adding: 1, max: 2 });
});
