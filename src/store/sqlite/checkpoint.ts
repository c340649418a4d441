import type { CheckpointReport } from './workers/checkpoint.js';
import { startThread } from './workers/start.js';
import { revived } from './workers/thread.js';

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

/**
 * Checkpoints the store's WAL in a thread of its own, so that the serving connection never does
 * (it runs with wal_autocheckpoint = 0). A checkpoint copies the WAL's frames back into the database
 * file and syncs both files: SQLite's automatic one runs inside the COMMIT that pushes the WAL past
 * 1,000 frames, so on the event loop, where every request in flight waited for it (an fsync of the
 * database file, about once a second under a steady write load).
 *
 * Same threshold as SQLite's default (`frames`, 1,000), checked every `checkMs` (see
 * workers/checkpoint.ts for how). Reads never wait for it; a write waits only while the last frames are
 * copied and the file synced (the FULL step), where before every request in flight waited for the whole
 * checkpoint.
 */
export function startCheckpointer(
  path: string,
  events: CheckpointEvents,
  { frames = CHECKPOINT_FRAMES, checkMs = CHECKPOINT_CHECK_MS }: { frames?: number; checkMs?: number } = {},
): WalCheckpointer {
  const shared = new SharedArrayBuffer(4);
  const state = new Int32Array(shared);
  const worker = startThread('checkpoint', { path, state: shared, frames, check: checkMs });
  // Never what keeps a process alive: close stops it.
  worker.unref();
  let closing = false;
  let fatal: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    worker.on('message', (r: CheckpointReport) => {
      if (r.ok) return events.recovered();
      const error = revived(r);
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
