import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';

/**
 * The hidden files `backup` (sqlite/backup.ts) and `export` (transfer/sink.ts, from either backend) write
 * before renaming them into place: a store-level module, not a backend's. They hold token hashes
 * and webhook signing secrets, and a process killed before it could remove its own (kill -9, a crash,
 * a power cut) used to leave one behind for good. So the name says who wrote it: this machine (a short
 * hash of the host name: a pid means nothing on another host sharing the directory, nor in another
 * container) and the process id, and the next backup or export into that directory removes the ones
 * whose process is gone.
 */

/** Eight hex digits of the host name's SHA-256. */
function machine(): string {
  return createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
}

/** `.FILE.<machine>-<pid>.<random>.tmp`, beside `final`. */
export function temporaryPath(final: string): string {
  return join(dirname(final), `.${basename(final)}.${machine()}-${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** What `temporaryPath` makes, and the files SQLite may have kept beside one (a backup's copy is a database). */
const TEMPORARY = /^\..+\.([0-9a-f]{8})-([1-9]\d{0,9})\.[0-9a-f]{12}\.tmp(?:-journal|-wal|-shm)?$/;

/** Whether a process with this id runs on this machine (EPERM: it does, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Removes the temporary files in `dir` left by a backup or an export that ended without removing its
 * own, and returns their names. Only plain files of this user named as `temporaryPath` names them, on
 * this machine, by a process that no longer runs: a backup or export still writing its file (here or on
 * another machine) keeps it. A pid reused since is taken as still running: its file waits for the next time.
 */
export function removeStaleTemporaries(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const here = machine();
  const uid = process.getuid?.();
  const removed: string[] = [];
  for (const name of names) {
    const m = TEMPORARY.exec(name);
    if (!m || m[1] !== here) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || running(pid)) continue;
    const path = join(dir, name);
    const stats = lstatSync(path, { throwIfNoEntry: false });
    if (!stats?.isFile() || (uid !== undefined && stats.uid !== uid)) continue;
    try {
      unlinkSync(path);
      removed.push(name);
    } catch {
      // Removed meanwhile, or not ours to remove after all: nothing to do.
    }
  }
  return removed;
}
