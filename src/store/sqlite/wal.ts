import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { WalSyncAnswer, WalSyncRequest } from './workers/wal-sync.js';
import { startThread } from './workers/start.js';
import { revived } from './workers/thread.js';

/** Makes the frames written to the WAL so far survive power loss. */
export interface WalSync {
  /** Off the event loop; `done` is called on the event loop afterwards. One call at a time. */
  sync(done: (error: Error | null) => void): void;
  /**
   * Hands a sync that has finished by now to its `done` at once, when the event loop has not got to its
   * answer yet: a busy loop gets to it only at its next turn, after every socket that turn found ready.
   */
  poll(): void;
  /** The same, blocking: for close, which must leave nobody waiting. */
  syncNow(): void;
  /** Stops what `sync` runs on; a sync still in flight is never answered. */
  close(): void;
}

/** fdatasync of the file at `path`, opened anew (so it is the file at that path now that is synced). */
function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * fdatasync(2) of the store's WAL file (`<store>-wal`), as SQLite's own commit does with synchronous=FULL,
 * through a descriptor of our own: the kernel flushes the file's dirty pages whichever descriptor wrote
 * them. The file is opened anew for each sync, never kept open, so a file replaced since is not synced in
 * its stead.
 *
 * In a worker thread of its own (workers/wal-sync.ts), started at the first sync, rather than libuv's thread pool: that pool
 * (4 threads) also runs dns.lookup, and the webhook sender resolves the host names users register, so
 * a destination whose name server does not answer would hold the creates of every user back.
 *
 * The thread also counts its syncs in shared memory, so that `poll` can answer a finished sync before
 * its message is read: under load the event loop reads messages once a turn, after serving every socket
 * that turn found ready, and a batch whose sync waited
 * for the one in flight waited two or three such turns. Its message, read later, is then passed over.
 */
export function walFileSync(walPath: string): WalSync {
  let worker: Worker | undefined;
  let state: Int32Array | undefined;
  const waiting: Array<(error: Error | null) => void> = [];
  /** Syncs of the current thread handed to their `done` (by `poll` or by their message), and messages read. */
  let answered = 0;
  let read = 0;
  const stopped = (w: Worker, error: Error): void => {
    if (worker !== w) return;
    worker = undefined;
    for (const done of waiting.splice(0)) done(error);
  };
  const start = (): Worker => {
    const shared = new SharedArrayBuffer(8);
    const w = startThread('wal-sync', shared);
    state = new Int32Array(shared);
    answered = 0;
    read = 0;
    w.on('message', (answer: WalSyncAnswer) => {
      if (worker !== w) return;
      // Answered already by poll: pass over.
      const done = ++read > answered ? waiting.shift() : undefined;
      if (done !== undefined) answered++;
      // Nothing else waits on the thread: let the process end (a CLI command) without stopping it.
      if (waiting.length === 0 && read >= answered) w.unref();
      done?.(answer === null ? null : revived(answer));
    });
    w.on('error', (error) => stopped(w, error));
    w.on('exit', (code) => stopped(w, new Error(`the WAL sync thread exited with code ${code}`)));
    return w;
  };
  return {
    sync(done) {
      worker ??= start();
      waiting.push(done);
      // Held while a sync is in flight, so that the process waits for its answer.
      worker.ref();
      worker.postMessage(walPath satisfies WalSyncRequest);
    },
    poll() {
      // A failed sync is left to its message, which says why.
      if (state === undefined || waiting.length === 0 || Atomics.load(state, 0) <= answered || Atomics.load(state, 1) !== 0) return;
      answered++;
      (waiting.shift() as (error: Error | null) => void)(null);
    },
    syncNow() {
      syncFile(walPath);
    },
    close() {
      const w = worker;
      worker = undefined;
      state = undefined;
      waiting.length = 0;
      void w?.terminate();
    },
  };
}
