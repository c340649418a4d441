// A worker thread (backup.ts's copyPages): the backup's copy of the store.
import Database from '../driver.js';
import { inThread, threadError, type ThreadError } from './thread.js';

export interface BackupCopyData {
  /** The store's real path. */
  readonly store: string;
  /** Where the copy goes: an empty file, which SQLite takes for a new database. */
  readonly temporary: string;
  /** How long to wait for a store another connection holds locked. */
  readonly timeoutMs: number;
}

/** `started` once the copy knows the store's size, then `copied` or `error`. */
export type BackupCopyMessage =
  | { started: { totalPages: number; pageSize: number } }
  | { copied: { totalPages: number } }
  | { error: ThreadError };

/**
 * Its first step only starts the backup; the next copies every page in one step, so one read
 * transaction. Copied in small steps, every write the server commits in between would restart it, and
 * under steady writes it might never finish. That step blocks the thread it runs on for as long as it
 * copies, hence a thread of its own: the CLI's thread meanwhile counts the pages written into the copy,
 * for its progress line.
 */
const { data, post } = inThread<BackupCopyData, BackupCopyMessage>();

async function copy(): Promise<void> {
  let source: Database.Database | undefined;
  try {
    source = new Database(data.store, { fileMustExist: true, timeout: data.timeoutMs });
    const pageSize = source.pragma('page_size', { simple: true }) as number;
    const copied = await source.backup(data.temporary, {
      progress({ totalPages }) {
        post({ started: { totalPages, pageSize } });
        return 0x7fffffff;
      },
    });
    post({ copied: { totalPages: copied.totalPages } });
  } catch (error) {
    post({ error: threadError(error) });
  } finally {
    source?.close();
  }
}

// Not a top-level await: the module is require()d (entry.cts), which refuses one.
void copy();
