import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from '../../src/store/sqlite/driver.js';
import { nextUrl } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { BIN, outputOf, startServer, type CliResult } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

/** Plants of another user, so that the copy has some size (about 6 MB) and takes a moment. */
const BALLAST = 100_000;
/** Ids past 2^53, so that the copy is checked to keep every digit. */
const BASE_ID = 2n ** 62n;

interface Stored {
  readonly name: string;
  readonly tag: string | null;
}

/** A store with alice's token (made by the CLI, as a user would) and the ballast, written before any server opens it. */
async function seededStore(dir: string): Promise<{ path: string; env: { DATABASE_URL: string }; token: string }> {
  const path = join(dir, 'store.db');
  const env = { DATABASE_URL: `sqlite:${path}` };
  const created = await cli(['token', 'create', '--user', 'alice'], { env });
  assert.equal(created.code, 0, created.stderr);
  const db = new Database(path);
  const insert = db.prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= BALLAST; i++) insert.run('ballast', i, `ballast plant ${i}`, i % 2 === 0 ? 'even' : null);
  })();
  db.close();
  return { path, env, token: created.stdout.trim() };
}

/** Every row of the copy, by owner and id, read with exact (bigint) ids. */
function rowsOf(path: string, owner: string): Map<bigint, Stored> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT id, name, tag FROM plants WHERE owner = ?').safeIntegers().all(owner) as Array<{ id: bigint } & Stored>;
    return new Map(rows.map((r) => [r.id, { name: r.name, tag: r.tag }]));
  } finally {
    db.close();
  }
}

/** Files in `dir` other than those named: what a failed or refused backup must not leave behind. */
/** A named pipe (coreutils' mkfifo: no root needed, unlike a device node). */
export function fifo(dir: string, name: string): string {
  const path = join(dir, name);
  execFileSync('mkfifo', [path]);
  return path;
}

function otherFiles(dir: string, ...expected: string[]): string[] {
  return readdirSync(dir).filter((f) => !expected.includes(f));
}

test('a backup taken under write load opens, passes integrity_check and holds every plant acknowledged before it started', async (t) => {
  const dir = tempDir(t);
  const { env, token } = await seededStore(dir);
  const server = await startServer(t, env);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  // Eight clients create plants without pause; each 200 is recorded with when it arrived.
  const acknowledged = new Map<bigint, Stored & { at: number }>();
  let next = 0n;
  let stop = false;
  const writer = async () => {
    while (!stop) {
      const id = BASE_ID + next++;
      const plant = { name: `p${id}`, tag: id % 3n === 0n ? 'indoor' : null };
      const body = `{"id":${id},"name":"${plant.name}"${plant.tag === null ? '' : `,"tag":"${plant.tag}"`}}`;
      const res = await fetch(`${server.url}/plants`, { method: 'POST', headers, body });
      await res.arrayBuffer();
      if (res.status === 200) acknowledged.set(id, { ...plant, at: performance.now() });
    }
  };
  const writers = Array.from({ length: 8 }, writer);
  t.after(() => (stop = true));
  while (acknowledged.size < 300) await new Promise((r) => setTimeout(r, 20));

  const copy = join(dir, 'copy.db');
  const before = new Map(acknowledged);
  const started = performance.now();
  const backup = await cli(['backup', '--out', copy], { env });
  const ended = performance.now();
  stop = true;
  await Promise.all(writers);

  assert.equal(backup.code, 0, backup.stderr);
  assert.match(backup.stderr, new RegExp(`^using sqlite:${join(dir, 'store.db')}\n`));
  const summary = new RegExp(`^Backed up sqlite:\\S+ to ${copy}: (\\d+) bytes, (\\d+) plants, integrity_check ok\\.\n$`).exec(backup.stdout);
  assert.ok(summary, backup.stdout);
  const during = [...acknowledged.values()].filter((p) => p.at > started && p.at < ended).length;
  assert.ok(during > 0, 'the server went on acknowledging creates while the backup ran');
  t.diagnostic(`${before.size} creates acknowledged before the backup, ${during} while it ran (${Math.round(ended - started)} ms)`);

  // The copy, read directly: one standalone, sound file.
  assert.ok(!existsSync(`${copy}-wal`) && !existsSync(`${copy}-journal`), 'no -wal or -journal beside the copy');
  const db = new Database(copy, { readonly: true, fileMustExist: true });
  assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
  assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
  const total = db.prepare('SELECT count(*) FROM plants').pluck().get() as number;
  db.close();
  assert.equal(Number(summary[1]), readFileSync(copy).length, 'the size printed is the file\'s');
  assert.equal(Number(summary[2]), total, 'the plant count printed is the copy\'s');

  // Every plant acknowledged before the backup started, with its exact content.
  const alice = rowsOf(copy, 'alice');
  for (const [id, plant] of before) assert.deepEqual(alice.get(id), { name: plant.name, tag: plant.tag }, `plant ${id}`);
  // Nothing that was never acknowledged (a create in flight may have committed before its answer arrived).
  for (const id of alice.keys()) assert.ok(id >= BASE_ID && id < BASE_ID + next, `unexpected plant ${id}`);
  assert.equal(rowsOf(copy, 'ballast').size, BALLAST);

  // The original server serves on, then stops cleanly.
  const after = await fetch(`${server.url}/plants`, { method: 'POST', headers, body: `{"id":1,"name":"after the backup"}` });
  assert.equal(after.status, 200);
  assert.equal(await server.stop(), 0);

  // The copy is a store: plantstore serve opens it, and alice's token lists exactly its plants.
  const restored = await startServer(t, { DATABASE_URL: `sqlite:${copy}` });
  const names: string[] = [];
  for (let url: string | undefined = '/plants?limit=1000'; url !== undefined; ) {
    const res: Response = await fetch(`${restored.url}${url}`, { headers });
    assert.equal(res.status, 200);
    names.push(...((await res.json()) as Stored[]).map((p) => p.name));
    url = nextUrl(res.headers.get('link'));
  }
  assert.deepEqual(new Set(names), new Set([...alice.values()].map((p) => p.name)));
  assert.equal(names.length, alice.size);
  assert.equal(await restored.stop(), 0);
});

/** `plantstore backup ARGS` with files limited to `blocks` × 512 bytes: a disk that fills up during the copy. */
async function backupWithFileLimit(args: string[], env: Record<string, string>, blocks: number): Promise<CliResult> {
  return outputOf(spawn('sh', ['-c', `ulimit -S -f ${blocks} && exec "$0" "$@"`, process.execPath, BIN, 'backup', ...args], {
    env: { ...process.env, ...env },
    stdio: 'pipe',
  }));
}

test('a backup that fails while copying (the disk fills up) exits 1 and leaves no file behind', async (t) => {
  const dir = tempDir(t);
  const { env } = await seededStore(dir);
  const out = join(tempDir(t), 'copy.db');
  const res = await backupWithFileLimit(['--out', out], env, 1024); // 512 kB, far less than the store
  assert.equal(res.code, 1, `${res.stdout}${res.stderr}`);
  assert.match(res.stderr, /\nplantstore: .*(full|I\/O|too large)/i);
  assert.equal(res.stdout, '');
  assert.deepEqual(readdirSync(join(out, '..')), [], 'neither the file nor a temporary one');
  // The store is untouched.
  assert.equal(rowsOf(join(dir, 'store.db'), 'ballast').size, BALLAST);
});

test('a backup of a store another connection keeps locked waits for it, then fails saying so, and leaves nothing behind', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'store.db');
  const env = { DATABASE_URL: `sqlite:${path}` };
  assert.equal((await cli(['token', 'create', '--user', 'alice'], { env })).code, 0);
  // Rollback-journal mode, write-locked: SQLite's first backup step meets SQLITE_BUSY. It was taken for a
  // finished copy of nothing, which then failed its check as "no such table: plants".
  const lock = new Database(path);
  lock.pragma('journal_mode = DELETE');
  lock.exec("BEGIN EXCLUSIVE; INSERT INTO plants (owner, id, name) VALUES ('bob', 1, 'held')");
  t.after(() => lock.close());
  const out = tempDir(t);
  const res = await cli(['backup', '--out', join(out, 'copy.db')], { env });
  lock.exec('ROLLBACK');
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, /the backup to .*copy\.db failed, and nothing was left there: the store stayed locked by another connection for 5 s \(SQLITE_BUSY\); try again/);
  assert.deepEqual(readdirSync(out), []);
  // Once the lock is gone, the same backup is made.
  assert.equal((await cli(['backup', '--out', join(out, 'copy.db')], { env })).code, 0);
});

test('backup refuses PostgreSQL (pointing to pg_dump), an existing file without --force, the store itself, and paths it cannot write', async (t) => {
  const dir = tempDir(t);
  const { path, env } = await seededStore(dir);

  const pg = await cli(['backup', '--out', join(dir, 'pg.dump')], { env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' } });
  assert.equal(pg.code, 2, pg.stderr);
  assert.match(pg.stderr, /^plantstore: backup copies SQLite stores; .*pg_dump --format=custom .*pg_restore.*"Backups" in the README/);

  const missing = await cli(['backup'], { env });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /backup needs --out FILE/);

  const existing = join(dir, 'existing.db');
  writeFileSync(existing, 'keep me');
  const refused = await cli(['backup', '--out', existing], { env });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, new RegExp(`plantstore: ${existing} exists already; choose another file, or add --force to replace it`));
  assert.equal(readFileSync(existing, 'utf8'), 'keep me');
  const forced = await cli(['backup', '--out', existing, '--force'], { env });
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(rowsOf(existing, 'ballast').size, BALLAST);

  for (const store of [path, `${path}-wal`, `${path}.lock`]) {
    const self = await cli(['backup', '--out', store, '--force'], { env });
    assert.equal(self.code, 1, `${store}: ${self.stderr}`);
    assert.match(self.stderr, /that is the store .* or a file it keeps beside it/);
  }
  assert.equal(rowsOf(path, 'ballast').size, BALLAST, 'the store is intact');

  const cases: Array<[string, RegExp]> = [
    [join(dir, 'no-such-dir', 'copy.db'), /its directory .*no-such-dir does not exist/],
    [join(existing, 'copy.db'), /its directory .*existing\.db cannot be used/],
    [dir, /it is a directory; name a file in it/],
    // Renaming the copy over a pipe or a device would replace it with a plain file (/dev/null, for root).
    [fifo(dir, 'pipe'), /it is not a regular file \(a device, a pipe or a socket\)/],
  ];
  for (const [out, message] of cases) {
    const res = await cli(['backup', '--out', out, '--force'], { env });
    assert.equal(res.code, 1, `${out}: ${res.stderr}`);
    assert.match(res.stderr, message, out);
  }
  assert.ok(statSync(join(dir, 'pipe')).isFIFO(), 'the pipe is still a pipe');
  const storeFiles = ['store.db', 'store.db-wal', 'store.db-shm', 'store.db.lock'];
  assert.deepEqual(otherFiles(dir, ...storeFiles, 'existing.db', 'pipe'), [], 'no partial or temporary file');

  const nowhere = await cli(['backup', '--out', join(dir, 'x.db')], { env: { DATABASE_URL: `sqlite:${join(dir, 'none.db')}` } });
  assert.equal(nowhere.code, 1);
  assert.match(nowhere.stderr, /no SQLite store at .*none\.db: nothing to back up/);
  assert.ok(!existsSync(join(dir, 'none.db')), 'no store is created');
});
