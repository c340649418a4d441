import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { BACKEND } from '../helpers/app.js';
import { runCli } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';
import { call, errorCode, NOBODY, serve, tempDir, type Served, type ServeOptions } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

/** A store with alice's token, served with `options`; resolves once the store is open (no more 50301). */
async function served(t: TestContext, dir: string, options: ServeOptions, prepare: (path: string) => void = () => undefined) {
  const path = join(dir, 'store.db');
  const env = { DATABASE_URL: `sqlite:${path}` };
  const token = (await runCli(['token', 'create', '--user', 'alice'], env)).stdout.trim();
  prepare(path);
  const server: Served = serve(t, env, options);
  const url = await server.listening;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const create = (id: number) => call(`${url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name: `${'x'.repeat(190)}${id}` }) });
  const list = () => call(`${url}/plants?limit=1`, { headers });
  const ready = () => call(`${url}/readyz`);
  const opened = await eventually(async () => {
    const a = await ready();
    return errorCode(a) !== 50301 ? a : undefined;
  }, () => `the store did not open: ${server.output()}`);
  assert.notEqual(errorCode(opened), 50301, `the store did not open: ${server.output()}`);
  return { path, server, create, list, ready };
}

test('a store file the server\'s user cannot write: reads are served, writes answer 503 50300 (not 500), /readyz 503 50300, and an error says why', async (t) => {
  const dir = tempDir(t, NOBODY);
  // The store (created by root) stays root's, mode 644; its directory is nobody's, so the server can
  // take its lock and SQLite its -wal and -shm files, but opens the store itself read-only.
  const s = await served(t, dir, { as: NOBODY });
  const ready = await s.ready();
  assert.equal(ready.status, 503);
  assert.equal(errorCode(ready), 50300);
  const created = await s.create(1);
  assert.equal(created.status, 503, created.body);
  assert.equal(errorCode(created), 50300);
  assert.equal(created.headers.get('retry-after'), '2');
  assert.equal((await s.list()).status, 200, 'what is stored can still be read');
  assert.match(s.server.output(), new RegExp(`"level":50,.*"msg":"cannot write the SQLite store ${s.path} \\(attempt to write a readonly database\\).*user nobody may write`));
});

test('a disk that fills up under a running server: writes answer 503 50300 (not 500), /readyz turns 503, and both recover once there is room', async (t) => {
  // RLIMIT_FSIZE of 400 blocks of 512 bytes: writes that grow a file past 200 kB fail (EFBIG), as on a full disk.
  const s = await served(t, tempDir(t), { fileSizeBlocks: 400 });
  assert.equal((await s.ready()).status, 200);
  // /readyz answers 503 until a write succeeds: its own probe (at most one a second) or any other. A
  // checkpoint can make room for one meanwhile (the WAL starts over), and /readyz then rightly answers 200,
  // having logged that the store can be written again: the disk is filled again and /readyz asked again.
  let failed;
  let ready;
  let id = 0;
  let recovered = 0;
  const recoveries = () => s.server.output().match(/"level":30,.*"msg":"the SQLite store .* can be written again"/g)?.length ?? 0;
  for (let round = 1; round <= 5 && ready?.status !== 503; round++) {
    for (failed = undefined; id < 10_000 && failed === undefined;) {
      const answer = await s.create(++id);
      if (answer.status !== 200) failed = { id, answer };
    }
    assert.ok(failed, 'the store never filled up');
    assert.equal(failed.answer.status, 503, failed.answer.body);
    assert.equal(errorCode(failed.answer), 50300);
    ready = await s.ready();
    if (ready.status !== 503) {
      assert.equal(ready.status, 200, ready.body);
      recovered++;
      await eventually(() => (recoveries() >= recovered ? true : undefined), () => `/readyz answered 200 with no write since the failed one: ${s.server.output()}`);
    }
  }
  assert.ok(failed && ready);
  assert.equal(ready.status, 503);
  assert.equal(errorCode(ready), 50300);
  assert.equal((await s.list()).status, 200, 'reads go on');
  assert.match(s.server.output(), /"level":50,.*"msg":"cannot write the SQLite store/);

  // Room again (as root: raise the soft limit of the running server).
  execFileSync('prlimit', ['--pid', String(s.server.child.pid), '--fsize=unlimited:unlimited']);
  const back = await eventually(async () => {
    const a = await s.ready();
    return a.status === 200 ? a : undefined;
  }, () => `/readyz never 200: ${s.server.output()}`);
  assert.equal(back.status, 200, `/readyz: ${back.body}`);
  assert.equal((await s.create(failed.id)).status, 200, 'the same create succeeds');
  assert.match(s.server.output(), /"level":30,.*"msg":"the SQLite store .* can be written again"/);
});
