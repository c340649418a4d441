import { open, rename, stat, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { removeStaleTemporaries, temporaryPath } from '../store/temporary-files.js';

/** Where an export goes: written in chunks, each awaited, so memory holds one chunk whatever the store's size. */
export interface Sink {
  /** For messages: the file's path, or "stdout". */
  readonly name: string;
  write(text: string): Promise<void>;
  /** Everything written is in place (a file: on disk, under its name). */
  finish(): Promise<void>;
  /** After a failure: nothing is left under the file's name (an earlier file there stays as it was). */
  abort(): Promise<void>;
}

/** Lines are gathered into writes of about this many characters. */
const CHUNK_CHARS = 256 * 1024;

/** Gathers strings and hands them on in chunks. */
function chunked(name: string, flush: (chunk: string) => Promise<void>, finish: () => Promise<void>, abort: () => Promise<void>): Sink {
  let parts: string[] = [];
  let size = 0;
  const drain = async () => {
    if (size === 0) return;
    const chunk = parts.join('');
    parts = [];
    size = 0;
    await flush(chunk);
  };
  return {
    name,
    async write(text) {
      parts.push(text);
      size += text.length;
      if (size >= CHUNK_CHARS) await drain();
    },
    async finish() {
      await drain();
      await finish();
    },
    abort,
  };
}

/**
 * A file, written under a temporary name beside it (mode 0600: it holds webhook secrets) and renamed
 * over `path` only once complete and on disk, so a failed or interrupted export never leaves a
 * truncated file under the name a restore would use. An existing file is replaced only with `force`.
 * The temporary files that a killed export or backup left in that directory go first (`log` says which).
 *
 * A path that names something other than a regular file (a pipe, /dev/null, /dev/stdout) is written
 * into as it is: renaming over it would replace a device or a pipe with a plain file (run as root,
 * `--out /dev/null` used to leave every other process without a /dev/null).
 */
export async function fileSink(
  path: string, { cwd, force = false, log = (_line: string): void => undefined }: { cwd: string; force?: boolean; log?: (line: string) => void },
): Promise<Sink> {
  // Relative to the command's working directory; messages name the file as it was given.
  const target = resolve(cwd, path);
  const existing = await stat(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing?.isDirectory()) throw new Error(`cannot export to ${path}: it is a directory; name a file in it`);
  if (existing && !existing.isFile()) {
    const handle = await open(target, 'w');
    return chunked(
      path,
      async (chunk) => {
        await handle.write(chunk);
      },
      () => handle.close(),
      () => handle.close().catch(() => undefined),
    );
  }
  if (existing && !force) throw new Error(`${path} exists already; choose another file, or add --force to replace it`);
  const stale = removeStaleTemporaries(dirname(target));
  if (stale.length > 0) log(`removed what interrupted exports or backups had left beside ${path}: ${stale.join(', ')}`);
  const temp = temporaryPath(target);
  const handle = await open(temp, 'wx', 0o600);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  return chunked(
    path,
    async (chunk) => {
      await handle.write(chunk);
    },
    async () => {
      await handle.sync();
      await close();
      await rename(temp, target);
      // The rename itself is durable once the directory is synced.
      const dir = await open(dirname(target), 'r');
      await dir.sync().finally(() => dir.close());
    },
    async () => {
      await close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
    },
  );
}

/** A stream (stdout): each chunk waits for 'drain' when the stream asks; a write error (EPIPE) fails the export. */
export function streamSink(stream: NodeJS.WritableStream, name: string): Sink {
  let failed: Error | undefined;
  const onError = (error: Error) => {
    failed ??= error;
  };
  stream.on('error', onError);
  const done = () => {
    stream.removeListener('error', onError);
  };
  return chunked(
    name,
    async (chunk) => {
      if (failed) throw failed;
      if (stream.write(chunk)) return;
      await new Promise<void>((resolvePromise, reject) => {
        const onDrain = () => {
          stream.removeListener('error', onFail);
          resolvePromise();
        };
        const onFail = (error: Error) => {
          stream.removeListener('drain', onDrain);
          reject(error);
        };
        stream.once('drain', onDrain);
        stream.once('error', onFail);
      });
    },
    async () => {
      if (failed) throw failed;
      done();
    },
    async () => done(),
  );
}
