import { fstatSync, lstatSync, readlinkSync, realpathSync, statSync, type BigIntStats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** Symbolic links followed at most, as the kernel does (MAXSYMLINKS). */
const MAX_LINKS = 40;

/**
 * The file `path` names once every symlink and `..` is resolved, whether it exists or not: a dangling
 * symlink resolves through its target, as opening it for writing would. Nothing is created.
 */
function resolvedPath(path: string): string {
  let current = resolve(path);
  for (let links = 0; links <= MAX_LINKS; links++) {
    try {
      return realpathSync(current);
    } catch {
      // Not there (or not reachable): resolve its directory, then follow the name if it is a symlink.
    }
    let dir = dirname(current);
    try {
      dir = realpathSync(dir);
    } catch {
      return current; // a directory that does not exist: nothing there can be one of the store's files
    }
    const name = join(dir, basename(current));
    const link = lstatSync(name, { throwIfNoEntry: false })?.isSymbolicLink() ? readlinkSync(name) : undefined;
    if (link === undefined) return name;
    current = resolve(dir, link);
  }
  return current;
}

/** A file's status, or undefined when it cannot be read (not there, not reachable): then it matches nothing. */
function identity(stat: () => BigIntStats): BigIntStats | undefined {
  try {
    return stat();
  } catch {
    return undefined;
  }
}

/**
 * The files of the SQLite store at `store`: the database, the files SQLite keeps beside it (`-wal`,
 * `-shm`, `-journal`) and the server lock (`.lock`, file.ts). Writing over any of them loses
 * acknowledged writes or stops the server from starting again.
 */
function storeFiles(store: string): string[] {
  const real = resolvedPath(store);
  return [real, `${real}-wal`, `${real}-shm`, `${real}-journal`, `${real}.lock`];
}

/**
 * Why a command must not write its output to `out` (a path, or an open file descriptor such as
 * stdout's), or undefined: `out` is the SQLite store at `store` or one of its files, however it is
 * spelt. Paths are compared once symlinks and `..` are resolved (a symlink to the `-wal` included,
 * even a dangling one to a `-journal` that is not there yet); a file that exists is also compared by
 * device and inode, which catches a hard link and `/dev/stdout` redirected into the store.
 * `backup` and `export` both ask this before they write anything. Both paths are absolute: the CLI
 * resolves what it was given against its own working directory (io.cwd), which is not this process's.
 */
export function storeFileProblem(out: string | number, store: string): string | undefined {
  const files = storeFiles(store);
  const target = typeof out === 'number' ? undefined : resolvedPath(out);
  const matched = target !== undefined && files.includes(target) ? target : undefined;
  const stats = identity(() => (typeof out === 'number' ? fstatSync(out, { bigint: true }) : statSync(target ?? out, { bigint: true })));
  const same = stats?.isFile()
    ? files.find((file) => {
        const s = identity(() => statSync(file, { bigint: true }));
        return s !== undefined && s.dev === stats.dev && s.ino === stats.ino;
      })
    : undefined;
  const hit = matched ?? same;
  if (hit === undefined) return undefined;
  return `that is the store ${files[0]} or a file it keeps beside it (${basename(hit)}); writing there would destroy the store's data`;
}
