// A worker thread (file.ts's quickCheck): `PRAGMA quick_check` reads the whole file, seconds on a large store.
import Database from '../driver.js';
import { inThread, threadError, type ThreadError } from './thread.js';

export interface QuickCheckData {
  /** The store's real path. */
  readonly path: string;
}

/** Its one message: the rows of quick_check(5) ("ok" alone for a sound store), or why it could not run. */
export type QuickCheckAnswer = { problems: string[] } | { error: ThreadError };

const { data, post } = inThread<QuickCheckData, QuickCheckAnswer>();

function quickCheck(): void {
  let db: Database.Database | undefined;
  try {
    db = new Database(data.path, { fileMustExist: true });
    post({ problems: (db.pragma('quick_check(5)') as Array<{ quick_check: string }>).map((row) => row.quick_check) });
  } catch (error) {
    post({ error: threadError(error) });
  } finally {
    db?.close();
  }
}

quickCheck();
