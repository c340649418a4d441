// A worker thread (wal.ts's walFileSync): fdatasync of the store's WAL file, off the event loop.
import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import { inThread, threadError, type ThreadError } from './thread.js';

/**
 * Two Int32s. Each outcome is written there before its message is posted: [1] 0 for success and 1 for
 * an error, then [0] the count of syncs done (Atomics: the thread that reads the new count reads that
 * sync's outcome).
 */
export type WalSyncData = SharedArrayBuffer;
/** Each message it takes: the path of the file to sync. */
export type WalSyncRequest = string;
/** Its answer to each, in order: null for success. */
export type WalSyncAnswer = ThreadError | null;

const { data, port, post } = inThread<WalSyncData, WalSyncAnswer>();
const state = new Int32Array(data);
port.on('message', (path: WalSyncRequest) => {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    fdatasyncSync(fd);
    Atomics.store(state, 1, 0);
    Atomics.add(state, 0, 1);
    post(null);
  } catch (error) {
    Atomics.store(state, 1, 1);
    Atomics.add(state, 0, 1);
    post(threadError(error));
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
});
