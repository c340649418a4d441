import { Worker } from 'node:worker_threads';
import { sqliteDriver } from './driver.js';

/** SQLite's own default for wal_autocheckpoint: a checkpoint once the WAL holds this many frames not yet copied back. */
export const CHECKPOINT_FRAMES = 1000;
/** How often the thread asks how many frames wait (PRAGMA wal_checkpoint(NOOP), which copies nothing). */
export const CHECKPOINT_CHECK_MS = 100;

/** Told on the event loop of what happens in the thread. */
export interface CheckpointEvents {
  /** A checkpoint failed (not for SQLITE_BUSY, which is only tried again); once until one succeeds again. */
  failed(error: Error): void;
  /** A checkpoint succeeded after `failed`. */
  recovered(): void;
  /**
   * The thread is gone (it could not open the store, or it died): nothing checkpoints in the background
   * any more, and the serving connection must go back to checkpointing itself. Not called after `close`.
   */
  stopped(error: Error): void;
}

export interface WalCheckpointer {
  /** Stops the thread, after the checkpoint in flight if there is one, and closes its connection. */
  close(): Promise<void>;
}

type Report = { ok: true } | { ok: false; code?: string; message: string; fatal: boolean };

/**
 * Runs in a thread of its own, on a connection of its own; [0] of the shared Int32Array is set to 1 to
 * stop it. Every `check` ms it asks how many frames the WAL holds that are not yet in the database file
 * (NOOP, SQLite 3.51 and later: it answers without copying anything), and:
 *
 * - past `frames`, a PASSIVE checkpoint copies them back, holding back neither the writer nor a
 *   reader (a reader's snapshot still needs some: those wait for the next time);
 * - then a FULL one copies the frames committed meanwhile with the writer held off for that moment
 *   (timeout 0: if the writer is committing, it gives up and tries at the next check). The writer starts
 *   the WAL over only when every frame is copied back at the start of its transaction, which under
 *   load a PASSIVE checkpoint alone never achieves: the WAL would grow without end.
 *
 * synchronous=FULL (NORMAL does the same for a checkpoint): SQLite syncs the WAL before copying and the
 * database file after, so what the WAL made durable stays durable. Reports only changes (a failure, a
 * recovery), by message.
 */
const CHECKPOINTER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const state = new Int32Array(workerData.state);
const report = (error, fatal) => parentPort.postMessage(error === undefined ? { ok: true } : { ok: false, code: error.code, message: error.message, fatal });
let db;
try {
  db = new Database(workerData.path, { fileMustExist: true, timeout: 0 });
  db.pragma('synchronous = FULL');
  // It reads no table: a few pages of cache are enough.
  db.pragma('cache_size = 16');
  const waiting = db.prepare('PRAGMA wal_checkpoint(NOOP)');
  const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  const full = db.prepare('PRAGMA wal_checkpoint(FULL)');
  let failing = false;
  while (Atomics.wait(state, 0, 0, workerData.check) === 'timed-out') {
    try {
      const { log, checkpointed } = waiting.get();
      const pending = log - checkpointed;
      if (pending >= workerData.frames) passive.get();
      // Nothing copied since the WAL began (below the threshold), or everything (the writer starts over).
      else if (checkpointed === 0 || pending === 0) continue;
      full.get();
      if (failing) report();
      failing = false;
    } catch (error) {
      // Another connection is checkpointing (a CLI command's autocheckpoint) or holds a lock: the next
      // check tries again (the test of errors.ts's isBusy, which an eval'd thread cannot import).
      if (/^SQLITE_(BUSY|LOCKED)/.test(String(error.code))) continue;
      if (!failing) report(error, false);
      failing = true;
    }
  }
} catch (error) {
  report(error, true);
} finally {
  db?.close();
}`;

/**
 * Checkpoints the store's WAL in a thread of its own, so that the serving connection never does
 * (it runs with wal_autocheckpoint = 0). A checkpoint copies the WAL's frames back into the database
 * file and syncs both files: SQLite's automatic one runs inside the COMMIT that pushes the WAL past
 * 1,000 frames, so on the event loop, where every request in flight waited for it (an fsync of the
 * database file, about once a second under a steady write load).
 *
 * Same threshold as SQLite's default (`frames`, 1,000), checked every `checkMs` (see CHECKPOINTER for
 * how). Reads never wait for it; a write waits only while the last frames are copied and the file
 * synced (the FULL step), where before
 * every request in flight waited for the whole checkpoint.
 */
export function startCheckpointer(
  path: string,
  events: CheckpointEvents,
  { frames = CHECKPOINT_FRAMES, checkMs = CHECKPOINT_CHECK_MS }: { frames?: number; checkMs?: number } = {},
): WalCheckpointer {
  const shared = new SharedArrayBuffer(4);
  const state = new Int32Array(shared);
  const worker = new Worker(CHECKPOINTER, {
    eval: true,
    workerData: { driver: sqliteDriver.path, path, state: shared, frames, check: checkMs },
  });
  // Never what keeps a process alive: close stops it.
  worker.unref();
  let closing = false;
  let fatal: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    worker.on('message', (r: Report) => {
      if (r.ok) return events.recovered();
      const error = Object.assign(new Error(r.message), { code: r.code });
      if (r.fatal) fatal = error;
      else events.failed(error);
    });
    worker.on('error', (error) => {
      fatal ??= error;
    });
    worker.on('exit', (code) => {
      if (!closing) events.stopped(fatal ?? new Error(`the WAL checkpoint thread exited with code ${code}`));
      resolve();
    });
  });
  return {
    close() {
      closing = true;
      // Held until it has exited: whoever awaits this keeps the process alive meanwhile.
      worker.ref();
      Atomics.store(state, 0, 1);
      Atomics.notify(state, 0);
      return exited;
    },
  };
}
