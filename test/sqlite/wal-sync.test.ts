import assert from 'node:assert/strict';
import { pbkdf2 } from 'node:crypto';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import Database from '../../src/store/sqlite/driver.js';
import { WriteQueue } from '../../src/store/sqlite/queue.js';
import { walFileSync, type WalSync } from '../../src/store/sqlite/wal.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { BACKEND } from '../helpers/app.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

/**
 * A WAL sync held until the test lets it return (or fail): what the write queue does between a batch's
 * commit and its answer is then seen step by step. The queue, its SQLite file and the commits are real;
 * `walFileSync`, the real sync, is tested on its own below, and every other test runs through it.
 */
class HeldSync implements WalSync {
  readonly pending: Array<(error: Error | null) => void> = [];
  calls = 0;
  blockingCalls = 0;
  closed = 0;

  sync(done: (error: Error | null) => void): void {
    this.calls++;
    this.pending.push(done);
  }

  syncNow(): void {
    this.blockingCalls++;
  }

  close(): void {
    this.closed++;
  }

  release(error: Error | null = null): void {
    const done = this.pending.shift();
    assert.ok(done, 'no sync in flight');
    done(error);
  }

  /** Syncs that returned but whose answer the event loop has not read yet: `poll` hands them over. */
  finished = 0;

  finish(): void {
    assert.ok(this.pending.length > this.finished, 'no sync in flight');
    this.finished++;
  }

  poll(): void {
    for (; this.finished > 0; this.finished--) this.release();
  }
}

interface Settled {
  readonly state: 'pending' | 'resolved' | 'rejected';
  readonly value?: unknown;
}

/** A promise's state, as far as it is settled now. */
function watch(promise: Promise<unknown>): { readonly now: Settled } {
  let now: Settled = { state: 'pending' };
  promise.then((value) => (now = { state: 'resolved', value }), (value) => (now = { state: 'rejected', value }));
  return { get now() { return now; } };
}

/** A write queue on a real SQLite file, syncing through a HeldSync. */
function queueOnFile(t: TestContext) {
  const sync = new HeldSync();
  const path = join(tempDir(t), 'queue.db');
  const db = new Database(path, { timeout: 0 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY)');
  const other = new Database(path, { readonly: true });
  t.after(() => {
    other.close();
    db.close();
  });
  const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
  const log: string[] = [];
  /** Per batch settled, in order: whether it committed, and whether `afterCommit` was called for it. */
  const settledWoke: Array<[boolean, boolean]> = [];
  const queue = new WriteQueue(db, 1000, {
    unavailable: () => undefined,
    cannotWrite: (error) => log.push(`cannotWrite ${(error as Error).message}`),
    committed: () => log.push('committed'),
    settled: (committed, writes) => {
      log.push(`settled ${committed} ${writes}`);
      settledWoke.push([committed, false]);
    },
    afterCommit: () => {
      const last = settledWoke.at(-1);
      if (last) last[1] = true;
    },
  }, sync);
  /** Rows another connection sees: what is committed, answered or not. */
  const visible = () => other.prepare('SELECT x FROM t ORDER BY x').pluck().all();
  const write = (x: number, durable = true) => watch(queue.add(() => insert.run(x).changes, { durable }));
  return { db, queue, sync, write, visible, log, settledWoke };
}

test('a batch is answered only when the WAL sync after its commit returns; batches committed meanwhile share the next sync', async (t) => {
  const { db, write, visible, log, sync } = queueOnFile(t);
  const first = write(1);
  await turn();
  assert.deepEqual(visible(), [1], 'committed at once');
  assert.equal(db.pragma('synchronous', { simple: true }), 2, 'the connection is back to FULL after the batch');
  assert.equal(sync.calls, 1);
  await turn();
  assert.equal(first.now.state, 'pending', 'not answered before its sync returned');
  const second = write(2);
  await turn();
  const third = write(3);
  await turn();
  assert.deepEqual(visible(), [1, 2, 3]);
  assert.equal(sync.calls, 1, 'one sync in flight at a time');
  sync.release();
  await turn();
  assert.deepEqual([first.now, second.now.state, third.now.state], [{ state: 'resolved', value: 1 }, 'pending', 'pending']);
  assert.equal(sync.calls, 2, 'the batches committed during the first sync share the next');
  sync.release();
  await turn();
  assert.deepEqual([second.now.state, third.now.state], ['resolved', 'resolved']);
  assert.equal(sync.calls, 2);
  assert.deepEqual(log, ['committed', 'settled true 1', 'committed', 'settled true 1', 'committed', 'settled true 1']);
});

test('a sync that has returned is picked up by the next write or commit, not at the event loop\'s next turn; the next sync then covers the batch just committed', async (t) => {
  const { write, visible, sync } = queueOnFile(t);
  const first = write(1);
  await turn();
  assert.equal(sync.calls, 1);
  sync.finish();
  // Nothing polls until a write comes: the answer waits for the loop (here, for the test) as before.
  await turn();
  assert.equal(first.now.state, 'pending');
  const second = write(2);
  await Promise.resolve();
  assert.equal(first.now.state, 'resolved', 'answered within the call that queued the next write');
  assert.equal(sync.pending.length, 0);
  await turn();
  assert.deepEqual(visible(), [1, 2]);
  assert.equal(sync.calls, 2, 'the next batch has its own sync at once');
  const third = write(3);
  sync.finish();
  await turn();
  // The commit of the third batch found the second's sync returned: answered it, and started one sync for the third.
  assert.deepEqual([second.now.state, third.now.state], ['resolved', 'pending']);
  assert.equal(sync.calls, 3);
  sync.release();
  await turn();
  assert.equal(third.now.state, 'resolved');
});

test('a batch of non-durable writes alone needs no sync, but behind a durable batch not yet synced it waits for that sync', async (t) => {
  const { write, sync } = queueOnFile(t);
  const alone = write(1, false);
  await turn();
  await turn();
  assert.equal(alone.now.state, 'resolved');
  assert.equal(sync.calls, 0);
  const durable = write(2);
  await turn();
  const behind = write(3, false);
  await turn();
  await turn();
  assert.equal(behind.now.state, 'pending', 'answered only once the create before it is durable');
  sync.release();
  await turn();
  assert.deepEqual([durable.now.state, behind.now.state], ['resolved', 'resolved']);
  assert.equal(sync.calls, 1, 'it needed no sync of its own');
});

test('a failed WAL sync answers 503 to every write waiting (committed as they are), reports that the store cannot be written, and the next batch syncs again', async (t) => {
  const { write, visible, log, sync } = queueOnFile(t);
  const first = write(1);
  await turn();
  const second = write(2);
  await turn();
  sync.release(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await turn();
  for (const w of [first, second]) {
    assert.equal(w.now.state, 'rejected');
    assert.ok(w.now.value instanceof StoreUnavailableError, String(w.now.value));
  }
  assert.deepEqual(visible(), [1, 2], 'committed: whether they would survive a power loss is what is unknown');
  assert.deepEqual(log, ['cannotWrite EIO: i/o error, fdatasync', 'settled true 1', 'settled true 1']);
  const third = write(3);
  await turn();
  assert.equal(sync.calls, 2);
  sync.release();
  await turn();
  assert.equal(third.now.state, 'resolved');
  assert.equal(log.at(-2), 'committed', 'a synced batch reports the store writable again');
});

test('a write\'s wakeAfterCommit goes with its own batch: afterCommit follows that batch\'s commit, not a later batch, rolled back, that settles first', async (t) => {
  const { db, queue, sync, write, settledWoke } = queueOnFile(t);
  const first = watch(queue.add(() => {
    queue.wakeAfterCommit();
    return 1;
  }));
  await turn();
  // A write that leaves SQLite out of its transaction, as a disk-full or I/O error does: the batch is rolled back.
  const aborted = watch(queue.add(() => {
    queue.wakeAfterCommit();
    db.exec('ROLLBACK');
  }));
  await turn();
  assert.equal(aborted.now.state, 'rejected');
  assert.equal(first.now.state, 'pending');
  assert.deepEqual(settledWoke, [[false, false]], 'the rolled-back batch settles at once, with no wake-up');
  sync.release();
  await turn();
  assert.equal(first.now.state, 'resolved');
  assert.deepEqual(settledWoke, [[false, false], [true, true]]);
  const plain = write(2);
  await turn();
  sync.release();
  await turn();
  assert.equal(plain.now.state, 'resolved');
  assert.deepEqual(settledWoke.at(-1), [true, false], 'a batch no write marked wakes nobody');
});

test('close syncs once, blocking, and answers every write still waiting; a sync in flight that returns later changes nothing', async (t) => {
  const { queue, write, log, sync } = queueOnFile(t);
  const first = write(1);
  await turn();
  const queued = write(2);
  queue.close();
  await turn();
  assert.equal(sync.blockingCalls, 1);
  assert.equal(sync.closed, 1);
  assert.deepEqual([first.now.state, queued.now.state], ['resolved', 'resolved']);
  sync.release();
  await turn();
  assert.deepEqual(log, ['committed', 'settled true 1', 'committed', 'settled true 1']);
});

test('walFileSync: fdatasync of the file at its path, reported on the event loop; a missing file is an error, never a throw', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'store.db-wal');
  writeFileSync(path, 'frames');
  const wal = walFileSync(path);
  const gone = walFileSync(join(dir, 'gone-wal'));
  t.after(() => {
    wal.close();
    gone.close();
  });
  const synced = new Promise<Error | null>((resolve) => wal.sync(resolve));
  let calledBack = false;
  const missing = new Promise<Error | null>((resolve) => gone.sync((error) => {
    calledBack = true;
    resolve(error);
  }));
  assert.equal(calledBack, false, 'never called back before sync returned');
  assert.equal(await synced, null);
  assert.equal(((await missing) as NodeJS.ErrnoException | null)?.code, 'ENOENT');
  assert.equal(await new Promise((resolve) => wal.sync(resolve)), null, 'the thread serves sync after sync');
  wal.syncNow();
  assert.throws(() => gone.syncNow(), { code: 'ENOENT' });
});

test('walFileSync.poll answers a sync that has returned before the event loop reads its message; that message, read later, answers nobody', async (t) => {
  const path = join(tempDir(t), 'store.db-wal');
  writeFileSync(path, 'frames');
  const wal = walFileSync(path);
  t.after(() => wal.close());
  const answers: Array<Error | null> = [];
  wal.sync((error) => answers.push(error));
  // Blocks this thread (no event loop turn, so no message read) while the sync thread works: poll alone can answer.
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 1000 && answers.length === 0; i++) {
    Atomics.wait(pause, 0, 0, 10);
    wal.poll();
  }
  assert.deepEqual(answers, [null], 'answered by poll, within the same turn');
  // Still in that turn, a second sync, which fails (the file is gone). Were the first sync's late message
  // taken for its answer, it would be answered "synced" before it ran; and poll, which sees it return
  // (the thread is warm: well within the 300 ms below), leaves a failure to its message, which says why.
  unlinkSync(path);
  let calledBack = false;
  const failed = new Promise<Error | null>((resolve) => wal.sync((error) => {
    calledBack = true;
    resolve(error);
  }));
  for (let i = 0; i < 30; i++) {
    Atomics.wait(pause, 0, 0, 10);
    wal.poll();
  }
  assert.equal(calledBack, false, 'a failed sync is left to its message, which says why');
  assert.equal(((await failed) as NodeJS.ErrnoException | null)?.code, 'ENOENT');
  assert.deepEqual(answers, [null], 'the first sync was answered once');
});

test('walFileSync does not queue behind libuv\'s thread pool (dns.lookup of webhook hosts runs there): with every pool thread busy, a sync returns first', async (t) => {
  const path = join(tempDir(t), 'store.db-wal');
  writeFileSync(path, 'frames');
  const wal = walFileSync(path);
  t.after(() => wal.close());
  // Its thread started first: on a loaded machine a thread's start can outlast the pool's jobs, and what
  // this test is about is where a sync waits once the thread runs, not how soon a thread starts.
  assert.equal(await new Promise<Error | null>((resolve) => wal.sync(resolve)), null);
  const order: string[] = [];
  // As many pool jobs as the pool has threads (UV_THREADPOOL_SIZE, 4 by default), each about a second.
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const busy = Array.from({ length: threads }, () => new Promise<void>((resolve) => {
    pbkdf2(Buffer.from('x'), Buffer.from('y'), 500_000, 64, 'sha512', () => {
      order.push('pool');
      resolve();
    });
  }));
  const synced = new Promise<Error | null>((resolve) => wal.sync((error) => {
    order.push('sync');
    resolve(error);
  }));
  assert.equal(await synced, null);
  await Promise.all(busy);
  assert.equal(order[0], 'sync', `order: ${order.join(', ')}`);
});
