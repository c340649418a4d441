import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import { BACKEND, silentLogger } from '../helpers/app.js';
import { spawnServer } from '../helpers/process.js';
import { exitCode, tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const options = { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000 };
const sqlite = (path: string) => parseDatabaseUrl(`sqlite:${path}`, process.cwd());
const PAGE = 4096;

/** A store of a few hundred pages (many plants), closed, its WAL checkpointed into the file. */
async function bigStore(path: string): Promise<void> {
  const store = await openStore(sqlite(path), options);
  const creates = [];
  for (let i = 1; i <= 5000; i++) creates.push(store.plants.createPlant(`user${i % 50}`, { id: BigInt(i), name: `plant number ${i}`, tag: `tag${i % 7}` }));
  await Promise.all(creates);
  await store.close();
}

/** Overwrites pages in the middle of the file with random bytes, as a failing disk or a stray write would. */
function corruptMiddle(path: string): void {
  const pages = Math.floor(statSync(path).size / PAGE);
  assert.ok(pages > 100, `the store has ${pages} pages`);
  const fd = openSync(path, 'r+');
  writeSync(fd, randomBytes(20 * PAGE), 0, 20 * PAGE, Math.floor(pages / 2) * PAGE);
  closeSync(fd);
}

test('a file of random bytes is refused at server start with a message naming it', async (t) => {
  const path = join(tempDir(t), 'store.db');
  writeFileSync(path, randomBytes(10 * PAGE));
  await assert.rejects(
    openStore(sqlite(path), { ...options, server: true }),
    new RegExp(`^Error: the SQLite store ${path} is not a valid database or is corrupt \\(file is not a database\\); restore it from a backup`),
  );
});

test('a store with corrupted pages fails PRAGMA quick_check at server start, with a message naming it', async (t) => {
  const path = join(tempDir(t), 'store.db');
  await bigStore(path);
  corruptMiddle(path);
  await assert.rejects(
    openStore(sqlite(path), { ...options, server: true }),
    new RegExp(`^Error: the SQLite store ${path} is not a valid database or is corrupt \\(.+\\); restore it from a backup`),
  );
});

test('plantstore serve on a corrupt store exits non-zero at start and says which file and why', async (t) => {
  for (const damage of ['random bytes', 'corrupted pages']) {
    const path = join(tempDir(t), 'store.db');
    if (damage === 'random bytes') writeFileSync(path, randomBytes(10 * PAGE));
    else {
      await bigStore(path);
      corruptMiddle(path);
    }
    const server = spawnServer(t, { DATABASE_URL: `sqlite:${path}` });
    const code = await exitCode(server.exited);
    assert.ok(code !== 0 && code !== null && code !== 'still running', `${damage}: exit code ${String(code)}`);
    assert.match(server.fatal(), new RegExp(`the SQLite store ${path} is not a valid database or is corrupt`), damage);
    assert.doesNotMatch(server.logs(), /plantstore ready/, damage);
  }
});
