import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openTransferStore } from '../../src/store/open.js';
import { ImportConflictError } from '../../src/transfer/import.js';
import { exportStore } from '../../src/transfer/export.js';
import { fileSink } from '../../src/transfer/sink.js';
import { newEndpointId, newWebhookSecret } from '../../src/domain/webhook.js';
import { issueToken } from '../helpers/tokens.js';
import { bearer, create, errorBody, list, silentLogger, testApp, testDatabase } from '../helpers/app.js';
import { apiView, appOn, exportTo, importFrom, records, seedEdgeStore, tempDir } from '../helpers/transfer.js';

test('export then import into a fresh store keeps every plant in order with its exact id and bytes, tokens, endpoints and pending events', async (t) => {
  const source = await testApp(t, { webhookAllowPrivate: true });
  const { admin, alice, bob, revoked, expired, claimedEventId } = await seedEdgeStore(source.app, source.store);
  const before = await apiView(source.app, admin, [alice, bob]);

  const dir = tempDir(t);
  const file = join(dir, 'store.ndjson');
  const exported = await exportTo(source.config, file);
  const lines = readFileSync(file, 'utf8').split('\n');
  const header = JSON.parse(lines[0] as string);
  assert.deepEqual(Object.keys(header), ['format', 'version', 'backend', 'exportedAt', 'counts']);
  assert.equal(header.format, 'plantstore-export');
  assert.equal(header.version, 1);
  assert.equal(header.backend, source.store.backend);
  const plants = 2 * (10 + 3);
  // alice's plants reach both endpoints, bob's the admin's only.
  assert.deepEqual(header.counts, { plants, tokens: 5, webhooks: 2, events: plants + plants / 2 });
  assert.deepEqual(exported.counts, header.counts);
  assert.equal(lines.length, 1 + plants + 5 + 2 + plants + plants / 2 + 1, 'one line per record, each ending in a newline');
  assert.equal(lines.at(-1), '');
  assert.equal(statSync(file).mode & 0o777, 0o600, 'the file holds webhook secrets');
  assert.ok(lines.includes(`{"type":"plant","owner":"alice","id":9223372036854775807,"name":"🌵𝒳 astral"}`), 'exact id, no tag when absent');
  assert.ok(lines.some((l) => l.startsWith('{"type":"plant","owner":"alice","id":9007199254740993,')));
  assert.ok(lines.some((l) => l.startsWith('{"type":"plant","owner":"alice","id":-9223372036854775808,') && l.endsWith(',"tag":""}')));
  const claimedLine = JSON.parse(lines.find((l) => l.includes(claimedEventId)) as string);
  assert.equal(claimedLine.attempts, 1);
  assert.equal(claimedLine.nextAttemptAt, header.exportedAt, 'a claimed event is due at the snapshot');

  const target = await testDatabase(t);
  const imported = await importFrom(target.config, file);
  assert.deepEqual(imported.tallies.plant, { imported: plants, unchanged: 0, skipped: 0 });
  assert.deepEqual(imported.tallies.token, { imported: 5, unchanged: 0, skipped: 0 });
  assert.deepEqual(imported.tallies.event, { imported: plants * 1.5, unchanged: 0, skipped: 0 });

  const again = join(dir, 'again.ndjson');
  await exportTo(target.config, again);
  assert.equal(records(again), records(file), 'the same records, in the same order, byte for byte');

  const { app } = await appOn(t, target.config);
  assert.deepEqual(await apiView(app, admin, [alice, bob]), before, 'every listing as every user, page by page, identical');
  assert.equal((await list(app, alice, '?limit=1')).statusCode, 200, 'a token made before the move works after it');
  assert.equal((await list(app, revoked)).statusCode, 401, 'a revoked token stays revoked');
  assert.equal((await list(app, expired)).statusCode, 401, 'an expired token stays expired');
  // A cursor is a position in one store: one from before the move does not open here.
  const link = (await list(source.app, alice, '?limit=1')).headers.link as string;
  const cursorUrl = /^<([^>]+)>/.exec(link)?.[1] as string;
  const stale = await app.inject({ method: 'GET', url: cursorUrl, headers: bearer(alice) });
  assert.equal(stale.statusCode, 400);
  assert.equal(errorBody(stale).error, 40003);
});

test('importing twice changes nothing, and a store that has other plants gets the file\'s after its own', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  for (const id of [3, 1, 2]) assert.equal((await create(source.app, alice, { id, name: `p${id}` })).statusCode, 200);
  const dir = tempDir(t);
  const file = join(dir, 'a.ndjson');
  await exportTo(source.config, file);

  const target = await testApp(t);
  const own = await target.token('alice');
  assert.equal((await create(target.app, own, { id: 10, name: 'already here' })).statusCode, 200);
  await target.store.close(); // the server stops, as an import into SQLite needs
  await importFrom(target.config, file);
  const second = await importFrom(target.config, file);
  assert.deepEqual(second.tallies.plant, { imported: 0, unchanged: 3, skipped: 0 });
  assert.deepEqual(second.tallies.token, { imported: 0, unchanged: 1, skipped: 0 });
  const { app } = await appOn(t, target.config);
  const names = (await list(app, own, '?limit=10')).json().map((p: { name: string }) => p.name);
  assert.deepEqual(names, ['already here', 'p3', 'p1', 'p2']);
  assert.equal((await list(app, alice)).statusCode, 200);
});

test('a conflict stops the import, names the record and field, and leaves that batch out; --skip-conflicts keeps the store\'s and imports the rest', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  for (const [id, name] of [[1, 'one'], [2, 'two'], [3, 'three']] as const) await create(source.app, alice, { id, name, tag: 't' });
  const file = join(tempDir(t), 'a.ndjson');
  await exportTo(source.config, file);

  const target = await testDatabase(t);
  const first = await appOn(t, target.config);
  const other = (await issueToken(first.store, { user: 'alice' })).secret;
  assert.equal((await create(first.app, other, { id: 2, name: 'two', tag: 'other' })).statusCode, 200);
  await first.app.close();
  await first.store.close();

  await assert.rejects(importFrom(target.config, file), (error: unknown) => {
    assert.ok(error instanceof ImportConflictError);
    assert.match(error.message, /conflict: plant owner "alice", id 2 is in the store with another tag/);
    assert.match(error.message, /lines 2 to 4 were not imported/);
    return true;
  });
  const log: string[] = [];
  const skipped = await importFrom(target.config, file, true, log);
  assert.deepEqual(skipped.tallies.plant, { imported: 2, unchanged: 0, skipped: 1 });
  assert.match(log.join('\n'), /skipped conflict: plant owner "alice", id 2/);
  const { app } = await appOn(t, target.config);
  assert.deepEqual((await list(app, alice, '?limit=10')).json(), [{ name: 'two', tag: 'other' }, { name: 'one', tag: 't' }, { name: 'three', tag: 't' }]);
});

test('a token whose id is taken here gets a new one and still authenticates', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  const file = join(tempDir(t), 'a.ndjson');
  await exportTo(source.config, file);
  const target = await testDatabase(t);
  const first = await appOn(t, target.config);
  await issueToken(first.store, { user: 'zed' }); // takes id 1
  await first.app.close();
  await first.store.close();
  const log: string[] = [];
  await importFrom(target.config, file, false, log);
  assert.deepEqual(log, ['token 1 is token 2 in this store: its id was another token\'s here']);
  const { app, store } = await appOn(t, target.config);
  assert.equal((await list(app, alice)).statusCode, 200);
  assert.deepEqual((await store.tokens.listTokens()).map((tk) => [tk.id, tk.user]), [[1, 'zed'], [2, 'alice']]);
  assert.equal((await issueToken(store, { user: 'new' })).record.id, 3, 'new tokens get ids after the imported ones');
});

test('a file cut short, damaged, out of order or of an unknown version fails with a message that says so', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  for (let id = 1; id <= 3; id++) await create(source.app, alice, { id, name: `p${id}` });
  const dir = tempDir(t);
  const file = join(dir, 'a.ndjson');
  await exportTo(source.config, file);
  const lines = readFileSync(file, 'utf8').split('\n');
  const header = lines[0] as string;
  const cases: Array<[string, string | Buffer, RegExp]> = [
    ['empty', '', /the file is empty/],
    ['not an export', '{"hello":1}\n', /not a plantstore export header/],
    ['newer version', `${header.replace('"version":1', '"version":2')}\n`, /version 2; this plantstore reads version 1 only/],
    ['cut at a line end', `${lines.slice(0, 3).join('\n')}\n`, /ends after 2 of the 3 plants its header announces: it was cut short/],
    ['cut inside a line', lines.join('\n').slice(0, -20), /line \d+: not JSON/],
    ['id past int64', `${header}\n{"type":"plant","owner":"a","id":9223372036854775808,"name":"x"}\n`, /line 2: "id" must be a 64-bit signed integer/],
    ['fractional id', `${header}\n{"type":"plant","owner":"a","id":1.5,"name":"x"}\n`, /line 2: "id" must be a 64-bit/],
    ['name too long', `${header}\n{"type":"plant","owner":"a","id":1,"name":"${'x'.repeat(201)}"}\n`, /line 2: "name" must be 1 to 200 characters/],
    ['unpaired surrogate', `${header}\n{"type":"plant","owner":"a","id":1,"name":"\\ud800"}\n`, /line 2: "name" must not contain U\+0000 or unpaired surrogates/],
    ['U+0000', `${header}\n{"type":"plant","owner":"a","id":1,"name":"a\\u0000"}\n`, /U\+0000/],
    ['duplicate key', `${header}\n{"type":"plant","owner":"a","id":1,"name":"x","name":"y"}\n`, /line 2: a field is written twice/],
    ['unknown field', `${header}\n{"type":"plant","owner":"a","id":1,"name":"x","color":"red"}\n`, /line 2: unknown field "color"/],
    ['out of order', `${header.replace('"tokens":1', '"tokens":1')}\n${lines[4]}\n${lines[1]}\n`, /line 3: a plant after the token lines/],
    ['more than announced', `${lines.slice(0, 4).join('\n')}\n${lines[1]?.replace('"id":1', '"id":9')}\n`, /line 5: more plants than the 3 the header announces/],
    ['invalid UTF-8', Buffer.concat([Buffer.from(`${header}\n{"type":"plant","owner":"a","id":1,"name":"`), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]), /not valid UTF-8/],
  ];
  for (const [what, content, message] of cases) {
    const path = join(dir, 'bad.ndjson');
    writeFileSync(path, content);
    const target = await testDatabase(t);
    await assert.rejects(importFrom(target.config, path), (error: Error) => {
      assert.match(error.message, message, what);
      return true;
    }, what);
  }
});

test('export reads one snapshot while the store is written, and a failed export leaves no file behind', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  for (let id = 1; id <= 2500; id += 1) await source.store.plants.createPlant('alice', { id: BigInt(id), name: `p${id}` });
  const file = join(tempDir(t), 'a.ndjson');
  const store = await openTransferStore(source.config, { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000, importing: false });
  t.after(() => store.close());
  let writes = 0;
  const sink = await fileSink(file, { cwd: process.cwd() });
  // The server goes on creating plants while the export pages through its snapshot.
  const writing = { ...sink, write: async (text: string) => {
    if (writes++ % 500 === 0) assert.equal((await create(source.app, alice, { id: 100_000 + writes, name: 'later' })).statusCode, 200);
    return sink.write(text);
  } };
  const summary = await exportStore(store, writing);
  assert.equal(summary.counts.plants, 2500);
  assert.equal(readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('"later"')).length, 0);

  const dir = tempDir(t);
  const broken = await fileSink(join(dir, 'b.ndjson'), { cwd: process.cwd() });
  await assert.rejects(exportStore(store, { ...broken, write: async () => { throw new Error('disk full'); } }), /disk full/);
  assert.deepEqual(readdirSync(dir), [], 'neither the file nor its temporary file');
});

test('an export leaves a pending test event behind: it announces no plant, and after a move would arrive as a plant\'s event', async (t) => {
  const source = await testApp(t);
  const created = await source.store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'alice', allUsers: false, url: 'https://hooks.example/alice', description: null, secret: newWebhookSecret() }, 10);
  assert.ok(created !== 'limit');
  await source.store.plants.createPlant('alice', { id: 1n, name: 'a' });
  const testEvent = await source.store.webhooks.queueTestEvent(created.id, 'alice');
  assert.equal(typeof testEvent, 'string');
  const file = join(tempDir(t), 'store.ndjson');
  const exported = await exportTo(source.config, file);
  assert.equal(exported.counts.events, 1, 'the plant\'s event only');
  const text = readFileSync(file, 'utf8');
  assert.ok(!text.includes(testEvent as string), 'no line names the test event');
  assert.equal(text.split('\n').filter((l) => l.startsWith('{"type":"event"')).length, 1);
});
