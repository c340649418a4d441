import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCheckpointer, type CheckpointEvents } from '../../src/store/sqlite/checkpoint.js';
import Database from '../../src/store/sqlite/driver.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { BACKEND } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

interface WalState {
  readonly log: number;
  readonly checkpointed: number;
}

/**
 * A store file in WAL mode and a writer that never checkpoints by itself (wal_autocheckpoint = 0), as
 * the server's connection: what is copied back into the file is the thread's doing. One row of 3,000
 * bytes a commit: a page or two, so a frame or two of WAL each.
 */
function walFile(t: TestContext) {
  const path = join(tempDir(t), 'store.db');
  const db = new Database(path);
  t.after(() => db.close());
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (x BLOB)');
  const insert = db.prepare('INSERT INTO t VALUES (randomblob(3000))');
  const noop = db.prepare<[], WalState>('PRAGMA wal_checkpoint(NOOP)');
  return {
    path,
    db,
    write(commits: number) {
      for (let i = 0; i < commits; i++) insert.run();
    },
    /**
     * `write`, with the thread kept from copying any of these commits back until they are all written: a
     * reader's snapshot taken first holds them in the WAL. Otherwise, on a busy machine, the thread could
     * copy back part of them while they are written, and the writer start the WAL over under the rest,
     * leaving fewer frames than the threshold and so nothing more to copy.
     */
    writeAtOnce(commits: number) {
      const reader = new Database(path);
      try {
        reader.exec('BEGIN');
        reader.prepare('SELECT count(*) FROM t').get();
        for (let i = 0; i < commits; i++) insert.run();
        reader.exec('COMMIT');
      } finally {
        reader.close();
      }
    },
    /** Frames in the WAL, and how many of them are copied back (SQLite 3.51's NOOP mode copies nothing). */
    wal: () => noop.get() as WalState,
  };
}

/** Events that are recorded; `stopped` also resolves `gone`. */
function recorder() {
  const seen = { failed: [] as Error[], recovered: 0, stopped: [] as Error[] };
  let resolveGone: (error: Error) => void = () => undefined;
  const gone = new Promise<Error>((resolve) => (resolveGone = resolve));
  const events: CheckpointEvents = {
    failed: (error) => seen.failed.push(error),
    recovered: () => seen.recovered++,
    stopped: (error) => {
      seen.stopped.push(error);
      resolveGone(error);
    },
  };
  return { seen, events, gone };
}

const copiedBack = (w: WalState) => w.log > 0 && w.checkpointed === w.log;

test('past its threshold the thread copies the WAL back into the file, and the writer then starts the WAL over', async (t) => {
  const f = walFile(t);
  const { seen, events } = recorder();
  const checkpointer = startCheckpointer(f.path, events, { frames: 20, checkMs: 10 });
  t.after(() => checkpointer.close());
  f.writeAtOnce(30);
  const before = f.wal();
  assert.ok(before.log >= 30, `30 commits wrote ${before.log} frames`);
  const after = await eventually(() => (copiedBack(f.wal()) ? f.wal() : undefined), () => `not copied back: ${JSON.stringify(f.wal())}`);
  assert.ok(copiedBack(after), `not copied back: ${JSON.stringify(after)}`);
  f.write(1);
  assert.ok(f.wal().log < 5, `the WAL started over: ${JSON.stringify(f.wal())}`);
  assert.deepEqual(seen, { failed: [], recovered: 0, stopped: [] });
});

test('below its threshold the thread copies nothing; past it, it does', async (t) => {
  const f = walFile(t);
  const checkpointer = startCheckpointer(f.path, recorder().events, { frames: 100, checkMs: 10 });
  t.after(() => checkpointer.close());
  f.write(10);
  // Twenty checks or more.
  await sleep(300);
  assert.equal(f.wal().checkpointed, 0, JSON.stringify(f.wal()));
  f.writeAtOnce(100);
  const after = await eventually(() => (copiedBack(f.wal()) ? f.wal() : undefined), () => `not copied back: ${JSON.stringify(f.wal())}`);
  assert.ok(copiedBack(after), `not copied back: ${JSON.stringify(after)}`);
});

test('frames committed after a checkpoint copied the rest are copied too (with the writer held off), so that the WAL starts over', async (t) => {
  // Under load the writer commits while a checkpoint copies, and it starts the WAL over only if every
  // frame is copied back when its transaction begins: the state made here by hand, deterministically.
  const f = walFile(t);
  f.write(20);
  // A reader whose snapshot holds the WAL's frames keeps the writer from starting the WAL over.
  const reader = new Database(f.path);
  t.after(() => reader.close());
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM t').get();
  f.db.pragma('wal_checkpoint(PASSIVE)');
  f.write(5);
  reader.exec('COMMIT');
  const tail = f.wal();
  assert.ok(tail.checkpointed >= 20 && tail.log > tail.checkpointed, `a copied WAL with frames after: ${JSON.stringify(tail)}`);
  f.write(1);
  assert.ok(f.wal().log > tail.log, 'with frames not copied back, the writer appends');

  // Far below the thread's threshold: only its second step copies them.
  const checkpointer = startCheckpointer(f.path, recorder().events, { frames: 1000, checkMs: 10 });
  t.after(() => checkpointer.close());
  const after = await eventually(() => (copiedBack(f.wal()) ? f.wal() : undefined), () => `not copied back: ${JSON.stringify(f.wal())}`);
  assert.ok(copiedBack(after), `not copied back: ${JSON.stringify(after)}`);
  f.write(1);
  assert.ok(f.wal().log < 5, `the WAL started over: ${JSON.stringify(f.wal())}`);
});

test('a thread that cannot open the store says so (stopped), and closing it afterwards is harmless', async (t) => {
  const dir = tempDir(t);
  const { seen, events, gone } = recorder();
  const checkpointer = startCheckpointer(join(dir, 'missing.db'), events);
  // The thread never keeps a process alive: a timer does, meanwhile, and fails the test if it lasts.
  let timer: NodeJS.Timeout | undefined;
  const error = await Promise.race([gone, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('stopped was not called')), 10_000)))]);
  clearTimeout(timer);
  assert.match(`${(error as NodeJS.ErrnoException).code} ${error.message}`, /SQLITE_CANTOPEN|unable to open/);
  await checkpointer.close();
  assert.equal(seen.stopped.length, 1);
  assert.deepEqual(seen.failed, []);
});

test('closing stops the thread without calling stopped', async (t) => {
  const f = walFile(t);
  const { seen, events } = recorder();
  const checkpointer = startCheckpointer(f.path, events, { checkMs: 10 });
  await sleep(50);
  await checkpointer.close();
  await checkpointer.close();
  assert.deepEqual(seen, { failed: [], recovered: 0, stopped: [] });
});

test("a server's store: its WAL is copied back and started over in the background, and removed at close", async (t) => {
  const path = join(tempDir(t), 'store.db');
  const store = await openSqliteStore(path, { server: true });
  let closed = false;
  t.after(() => (closed ? undefined : store.close()));
  const probe = new Database(path);
  t.after(() => probe.close());
  const wal = () => probe.prepare<[], WalState>('PRAGMA wal_checkpoint(NOOP)').get() as WalState;
  // One commit a create (each awaited), a few frames each: past SQLite's default 1,000.
  let highest = 0;
  for (let id = 1; highest < 1000 && id <= 5000; id++) {
    await store.plants.createPlant('alice', { id: BigInt(id), name: `plant ${id}` });
    highest = Math.max(highest, wal().log);
  }
  assert.ok(highest >= 1000, `the WAL reached ${highest} frames`);
  // Started over: far fewer frames than it had.
  const later = await eventually(async () => {
    await store.plants.createPlant('alice', { id: BigInt(10_000 + Date.now() % 1_000_000), name: 'one more' });
    const w = wal();
    return w.log < 1000 ? w : undefined;
  }, () => `the WAL was not started over: ${JSON.stringify(wal())}`);
  assert.ok(later.log < 1000, `the WAL was not started over: ${JSON.stringify(later)}`);
  probe.close();
  closed = true;
  await store.close();
  assert.equal(existsSync(`${path}-wal`), false, 'the WAL is removed at close');
});
