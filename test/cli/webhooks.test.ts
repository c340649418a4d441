import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/open.js';
import { silentLogger, testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';
const endpointId = (stderr: string) => /Created webhook endpoint (ep_[A-Za-z0-9_-]{22})/.exec(stderr)?.[1] ?? '';

test('webhook add prints the secret alone on stdout; list never shows it; remove removes', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  const added = await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://hooks.example/plants', '--description', 'sync\nline two'], { env });
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stdout, /^whsec_\S+\n$/, 'the secret alone on stdout');
  const secret = lastLine(added.stdout);
  assert.match(secret, SECRET);
  const id = endpointId(added.stderr);
  assert.ok(id, added.stderr);
  assert.match(added.stderr, /for user "alice" \(receives this user's new plants\): https:\/\/hooks\.example\/plants/);
  assert.match(added.stderr, /not shown again/);

  // --all reaches every user's plants while the user holds an active admin token, and says so when it holds none.
  const lone = await cli(['webhook', 'add', '--user', 'carol', '--url', 'https://carol.example/', '--all'], { env });
  assert.equal(lone.code, 0, lone.stderr);
  assert.match(lone.stderr, /receives this user's new plants/);
  assert.match(lone.stderr, /warning: user "carol" holds no active admin token: the endpoint gets only this user's plants until it does/);
  assert.equal((await cli(['webhook', 'remove', endpointId(lone.stderr)], { env })).code, 0);
  assert.equal((await cli(['token', 'create', '--user', 'root', '--admin'], { env })).code, 0);
  const all = await cli(['webhook', 'add', '--user', 'root', '--url', 'https://ops.example/', '--all'], { env });
  assert.equal(all.code, 0, all.stderr);
  assert.match(all.stderr, /receives every user's new plants/);
  assert.doesNotMatch(all.stderr, /warning/);
  const allId = endpointId(all.stderr);

  const listed = await cli(['webhook', 'list'], { env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.ok(!listed.stdout.includes('whsec_'), 'no secret in webhook list');
  const lines = listed.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 3, listed.stdout);
  assert.match(lines[0] ?? '', /^ID\s+USER\s+ALL\s+URL\s+CREATED\s+STATUS\s+DESCRIPTION$/);
  // The description's line break is shown escaped: one endpoint, one line.
  assert.match(lines[1] ?? '', new RegExp(`^${id}\\s+alice\\s+no\\s+https://hooks\\.example/plants\\s+\\S+Z\\s+active\\s+sync\\\\nline two$`));
  assert.match(lines[2] ?? '', new RegExp(`^${allId}\\s+root\\s+yes\\s+https://ops\\.example/\\s+\\S+Z\\s+active\\s+-$`));

  const json = await cli(['webhook', 'list', '--json'], { env });
  assert.equal(json.code, 0, json.stderr);
  assert.ok(!json.stdout.includes('whsec_'));
  const endpoints = JSON.parse(json.stdout);
  assert.deepEqual(Object.keys(endpoints[0]).sort(), ['allUsers', 'createdAt', 'description', 'disabledAt', 'disabledReason', 'id', 'url', 'user']);
  assert.deepEqual(
    endpoints.map((e: { id: string; user: string; allUsers: boolean; description: string | null }) => [e.id, e.user, e.allUsers, e.description]),
    [[id, 'alice', false, 'sync\nline two'], [allId, 'root', true, null]],
  );
  const aliceOnly = JSON.parse((await cli(['webhook', 'list', '--json', '--user', 'alice'], { env })).stdout);
  assert.deepEqual(aliceOnly.map((e: { id: string }) => e.id), [id]);

  const removed = await cli(['webhook', 'remove', id], { env });
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, new RegExp(`Removed webhook endpoint ${id}`));
  const after = JSON.parse((await cli(['webhook', 'list', '--json'], { env })).stdout);
  assert.deepEqual(after.map((e: { id: string }) => e.id), [allId]);
  const again = await cli(['webhook', 'remove', id], { env });
  assert.equal(again.code, 1);
  assert.match(again.stderr, new RegExp(`no webhook endpoint with ID ${id}`));
});

test('webhook deliveries shows the latest attempts, newest first; --json keeps exact int64 ids', async (t) => {
  const db = await testDatabase(t);
  const env = { DATABASE_URL: db.url };
  const added = await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://hooks.example/'], { env });
  assert.equal(added.code, 0, added.stderr);
  const id = endpointId(added.stderr);
  const empty = await cli(['webhook', 'deliveries', id, '--json'], { env });
  assert.equal(empty.code, 0, empty.stderr);
  assert.deepEqual(JSON.parse(empty.stdout), []);

  // Events and attempts as the server and its dispatcher would make them.
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000 });
  const big = 9223372036854775807n;
  assert.equal(await store.plants.createPlant('alice', { id: big, name: 'Big' }), 'created');
  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'Two' }), 'created');
  assert.equal(await store.plants.createPlant('bob', { id: 3n, name: 'Not hers' }), 'created');
  const at = new Date(Date.now() - 1000);
  const claimed = await store.outbox.claimDeliveries({ instance: 'i1', limit: 10, perEndpoint: 10, busy: [], leaseMs: 60_000 });
  assert.equal(claimed.length, 2);
  await store.outbox.recordAttempts('i1', claimed.map((delivery) =>
    delivery.plantId === big
      ? { delivery, outcome: 'retry' as const, status: 500, error: 'HTTP 500 | "quoted"', at, retryInMs: 60_000 }
      : { delivery, outcome: 'delivered' as const, status: 200, error: null, at, retryInMs: null }));
  await store.close();

  const json = await cli(['webhook', 'deliveries', id, '--json'], { env });
  assert.equal(json.code, 0, json.stderr);
  assert.ok(json.stdout.includes(`"plantId": ${big}`), json.stdout);
  const rows = JSON.parse(json.stdout.replace(/"plantId": (-?\d+)/g, '"plantId": "$1"'));
  assert.equal(rows.length, 2);
  const pending = rows.find((r: { plantId: string }) => r.plantId === String(big));
  assert.deepEqual(Object.keys(pending).sort(), ['at', 'attempt', 'error', 'eventId', 'nextAttemptAt', 'plantId', 'state', 'status']);
  assert.equal(pending.state, 'pending');
  assert.equal(pending.status, 500);
  assert.equal(pending.error, 'HTTP 500 | "quoted"');
  assert.equal(pending.eventId, claimed.find((d) => d.plantId === big)?.eventId);
  const done = rows.find((r: { plantId: string }) => r.plantId === '2');
  assert.deepEqual(Object.keys(done).sort(), ['at', 'attempt', 'eventId', 'plantId', 'state', 'status']);
  assert.equal(done.at, at.toISOString());

  const limited = JSON.parse((await cli(['webhook', 'deliveries', id, '--json', '--limit', '1'], { env })).stdout.replace(/"plantId": (-?\d+)/g, '"plantId": "$1"'));
  assert.deepEqual(limited, [rows[0]]);

  const table = await cli(['webhook', 'deliveries', id], { env });
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^AT\s+EVENT\s+PLANT\s+ATTEMPT\s+STATUS\s+STATE\s+NEXT\s+ERROR$/);
  assert.equal(lines.length, 3);
  assert.ok(lines.some((l) => new RegExp(`\\s${big}\\s+1\\s+500\\s+pending\\s+\\S+Z\\s+HTTP 500 \\| "quoted"$`).test(l)), table.stdout);
  assert.ok(lines.some((l) => /\s2\s+1\s+200\s+delivered\s+-\s+-$/.test(l)), table.stdout);

  const unknown = await cli(['webhook', 'deliveries', 'ep_AAAAAAAAAAAAAAAAAAAAAA'], { env });
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no webhook endpoint with ID ep_AAAAAAAAAAAAAAAAAAAAAA/);
});

test('webhook add refuses private destinations unless WEBHOOK_ALLOW_PRIVATE=on, and stops at WEBHOOK_MAX_PER_USER', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  for (const url of ['http://127.0.0.1:9/hook', 'http://[::1]/', 'http://169.254.169.254/', 'http://0x7f.1/']) {
    const refused = await cli(['webhook', 'add', '--user', 'alice', '--url', url], { env });
    assert.equal(refused.code, 2, url);
    assert.match(refused.stderr, /--url must not point at a loopback, private.*WEBHOOK_ALLOW_PRIVATE=on allows it/, url);
    assert.equal(refused.stdout, '');
  }
  const allowed = await cli(['webhook', 'add', '--user', 'alice', '--url', 'http://127.0.0.1:9/hook'], { env: { ...env, WEBHOOK_ALLOW_PRIVATE: 'on' } });
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.match(lastLine(allowed.stdout), SECRET);

  const limit = { ...env, WEBHOOK_MAX_PER_USER: '2' };
  assert.equal((await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://a.example/2'], { env: limit })).code, 0);
  const over = await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://a.example/3'], { env: limit });
  assert.equal(over.code, 1);
  assert.match(over.stderr, /user "alice" already has as many webhook endpoints as allowed \(WEBHOOK_MAX_PER_USER\): the limit is 2/);
  assert.equal(over.stdout, '');
  const bad = await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://a.example/'], { env: { ...env, WEBHOOK_MAX_PER_USER: 'many' } });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /WEBHOOK_MAX_PER_USER must be a whole number/);
});

test('webhook usage mistakes exit 2 with a message; webhook --help documents every command', async (t) => {
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  assert.equal((await cli(['migrate'], { env })).code, 0, 'a store to find no endpoint in');
  const cases: Array<[string[], number, RegExp]> = [
    [['webhook'], 2, /Usage:\n {2}plantstore webhook add/],
    [['webhook', 'frob'], 2, /unknown command "webhook frob"/],
    [['webhook', 'add', '--url', 'https://a.example/'], 2, /needs --user NAME/],
    [['webhook', 'add', '--user', 'alice'], 2, /needs --url URL/],
    [['webhook', 'add', '--user', ' alice', '--url', 'https://a.example/'], 2, /user name must not/],
    [['webhook', 'add', '--user', 'alice', '--url', 'ftp://a.example/'], 2, /--url must be an http: or https: URL/],
    [['webhook', 'add', '--user', 'alice', '--url', 'https://u:p@a.example/'], 2, /--url must not contain credentials/],
    [['webhook', 'add', '--user', 'alice', '--url', `https://a.example/${'a'.repeat(2048)}`], 2, /--url must be at most 2048 characters/],
    [['webhook', 'add', '--user', 'alice', '--url', 'https://a.example/', '--description', 'x'.repeat(501)], 2, /--description must be at most 500/],
    [['webhook', 'add', '--user', 'alice', '--url', 'https://a.example/', '--bogus'], 2, /unknown option --bogus; see "plantstore webhook add --help"/],
    [['webhook', 'remove'], 2, /needs one endpoint ID/],
    [['webhook', 'remove', 'a', 'b'], 2, /needs one endpoint ID/],
    [['webhook', 'remove', 'ep_nope'], 1, /no webhook endpoint with ID ep_nope/],
    [['webhook', 'deliveries'], 2, /needs one endpoint ID/],
    [['webhook', 'deliveries', 'ep_x', '--limit', '0'], 2, /--limit must be a whole number from 1 to 1000/],
    [['webhook', 'deliveries', 'ep_x', '--limit', '1001'], 2, /--limit must be a whole number from 1 to 1000/],
    [['webhook', 'deliveries', 'ep_x', '--limit', 'ten'], 2, /--limit must be a whole number from 1 to 1000/],
  ];
  for (const [args, code, message] of cases) {
    const res = await cli(args, { env });
    assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr + res.stdout, message, args.join(' '));
  }
  // Nothing was registered by any of them.
  assert.deepEqual(JSON.parse((await cli(['webhook', 'list', '--json'], { env })).stdout), []);

  const main = await cli(['--help']);
  for (const command of ['webhook add', 'webhook list', 'webhook remove ID', 'webhook deliveries ID']) assert.match(main.stdout, new RegExp(command));
  const help = await cli(['webhook', '--help']);
  assert.equal(help.code, 0);
  for (const option of ['--user', '--url', '--all', '--description', '--limit', '--json', '--database-url', 'WEBHOOK_ALLOW_PRIVATE', 'WEBHOOK_MAX_PER_USER']) {
    assert.match(help.stdout, new RegExp(option), option);
  }
  const token = await cli(['token', '--help']);
  assert.match(token.stdout, /default: all of them/);
  assert.match(token.stdout, /webhooks:manage/);
});

