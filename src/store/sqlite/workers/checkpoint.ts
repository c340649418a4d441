// A worker thread (checkpoint.ts's startCheckpointer): checkpoints the store's WAL on a connection of its own.
import Database from '../driver.js';
import { isBusy } from '../errors.js';
import { inThread, threadError, type ThreadError } from './thread.js';

export interface CheckpointData {
  /** The store's real path. */
  readonly path: string;
  /** One Int32: [0] is set to 1 (and notified) to stop the thread. */
  readonly state: SharedArrayBuffer;
  /** Frames waiting in the WAL past which a checkpoint runs. */
  readonly frames: number;
  /** Milliseconds between two looks at the WAL. */
  readonly check: number;
}

/**
 * Only changes are told: a checkpoint failed (`fatal`: the thread could not start and ends), or one
 * succeeded again after a failure.
 */
export type CheckpointReport = { ok: true } | ({ ok: false; fatal: boolean } & ThreadError);

/**
 * Every `check` ms it asks how many frames the WAL holds that are not yet in the database file
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
 * database file after, so what the WAL made durable stays durable.
 */
const { data, post } = inThread<CheckpointData, CheckpointReport>();
const state = new Int32Array(data.state);
const report = (error: unknown, fatal: boolean): void => post({ ok: false, fatal, ...threadError(error) });

function checkpointUntilStopped(): void {
  let db: Database.Database | undefined;
  try {
    db = new Database(data.path, { fileMustExist: true, timeout: 0 });
    db.pragma('synchronous = FULL');
    // It reads no table: a few pages of cache are enough.
    db.pragma('cache_size = 16');
    const waiting = db.prepare('PRAGMA wal_checkpoint(NOOP)');
    const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
    const full = db.prepare('PRAGMA wal_checkpoint(FULL)');
    let failing = false;
    while (Atomics.wait(state, 0, 0, data.check) === 'timed-out') {
      try {
        const { log, checkpointed } = waiting.get() as { log: number; checkpointed: number };
        const pending = log - checkpointed;
        if (pending >= data.frames) passive.get();
        // Nothing copied since the WAL began (below the threshold), or everything (the writer starts over).
        else if (checkpointed === 0 || pending === 0) continue;
        full.get();
        if (failing) post({ ok: true });
        failing = false;
      } catch (error) {
        // Another connection is checkpointing (a CLI command's autocheckpoint) or holds a lock: the next
        // check tries again.
        if (isBusy(error)) continue;
        if (!failing) report(error, false);
        failing = true;
      }
    }
  } catch (error) {
    report(error, true);
  } finally {
    db?.close();
  }
}

checkpointUntilStopped();
