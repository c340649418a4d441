import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, linkSync, mkdirSync, openSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli } from '../helpers/cli.js';
import { BIN, outputOf, startServer } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

const PLANTS = 100;

/** Every plant `token` lists, page after page. */
async function listAll(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/plants?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return ((await res.json()) as unknown[]).length;
}

test('export refuses the store, its -wal, -shm, -journal and .lock however the path is spelt, --force or not, and the store keeps every plant', async (t) => {
  // The default store, ./data/plantstore.db, relative to the directory the server and the CLI run in.
  // The server is a process of its own (it is killed below); the commands run in this one, in its directory.
  const dir = tempDir(t);
  const env = { DATABASE_URL: undefined };
  const created = await cli(['token', 'create', '--user', 'alice'], { env, cwd: dir });
  assert.equal(created.code, 0, created.stderr);
  const token = created.stdout.trim();
  const server = await startServer(t, env, dir);
  for (let i = 1; i <= PLANTS; i++) {
    const res = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: i, name: `plant ${i}` }),
    });
    assert.equal(res.status, 200);
  }
  const store = join(dir, 'data', 'plantstore.db');
  const wal = `${store}-wal`;
  assert.ok(statSync(wal).size > 0, 'the acknowledged plants are in the WAL');

  mkdirSync(join(dir, 'x'));
  symlinkSync(wal, join(dir, 'wal-link'));
  symlinkSync(`${store}-journal`, join(dir, 'journal-link')); // dangling: no -journal in WAL mode
  linkSync(wal, join(dir, 'wal-hard-link'));
  const spellings = [
    'data/plantstore.db-wal',
    './x/../data/plantstore.db-wal',
    join(dir, 'data', '.', 'plantstore.db-wal'),
    'wal-link',
    'wal-hard-link',
    'data/plantstore.db',
    'data/plantstore.db-shm',
    'data/plantstore.db-journal',
    'journal-link',
    'data/plantstore.db.lock',
  ];
  for (const out of spellings) {
    for (const force of [['--force'], []]) {
      const res = await cli(['export', '--out', out, ...force], { env, cwd: dir });
      assert.notEqual(res.code, 0, `export --out ${out} ${force.join('')}: ${res.stderr}`);
      assert.match(res.stderr, /plantstore: cannot export to .*: that is the store .*plantstore\.db or a file it keeps beside it/, out);
    }
  }
  assert.ok(!existsSync(`${store}-journal`), 'no -journal was created');

  // stdout redirected (appended) into the WAL: refused too, before a byte is written. A process of its
  // own, for a stdout that is the file's descriptor as the shell makes it.
  const fd = openSync(wal, 'a');
  const childEnv = { ...process.env };
  delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, [BIN, 'export'], { cwd: dir, env: childEnv, stdio: ['ignore', fd, 'pipe'] });
  closeSync(fd);
  const { code, stderr } = await outputOf(child);
  assert.equal(code, 1, stderr);
  assert.match(stderr, /plantstore: cannot export to stdout: that is the store/);

  // After a crash, every acknowledged plant is still there.
  await server.stop('SIGKILL');
  const restarted = await startServer(t, env, dir);
  assert.equal(await listAll(restarted.url, token), PLANTS);
  assert.equal(await restarted.stop(), 0);
});
