import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { BackupCopyData } from './backup-copy.js';
import type { CheckpointData } from './checkpoint.js';
import type { QuickCheckData } from './quick-check.js';
import type { WalSyncData } from './wal-sync.js';

/** The worker threads' modules, beside this file, each with the workerData it declares. */
interface Threads {
  'backup-copy': BackupCopyData;
  checkpoint: CheckpointData;
  'quick-check': QuickCheckData;
  'wal-sync': WalSyncData;
}

/**
 * The tests and bench/ run the sources under tsx (`node --import tsx`), where this file and the threads'
 * modules are .ts; from dist/ (`npm start`, the package) they are .js.
 */
const FROM_SOURCES = import.meta.url.endsWith('.ts');

/**
 * Starts the worker thread that runs `name`'s module, a file of its own: it is type-checked, imports what
 * it shares with the rest (the driver, errors.ts), and Node finds it as it found its parent, along the
 * same paths, with the same execArgv (--preserve-symlinks included). Not code in a string (`eval: true`):
 * Node 24 places such code in the working directory, and its require() reads the package.json files of
 * that directory and those above it, which a server's user may not be allowed to (CHANGELOG, Fixed).
 *
 * Its entry is CommonJS (entry.cts), which require()s the module: require() reads files synchronously,
 * where an ES module entry is read through libuv's thread pool, and a thread started while that pool is
 * busy (dns.lookup for webhooks: see wal.ts) would wait for it.
 *
 * From the sources, the entry is from-sources.cjs, which loads the .ts module through tsx's CommonJS
 * hooks, and the thread does not inherit the --import tsx: an ES module preload, itself read through the
 * thread pool (and tsx registers its hooks in a worker thread only from Node 22.22.3 and 24.11.1).
 */
export function startThread<Name extends keyof Threads>(name: Name, workerData: Threads[Name]): Worker {
  if (FROM_SOURCES) {
    const module = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
    return new Worker(new URL('./from-sources.cjs', import.meta.url), { workerData, argv: [module], execArgv: [] });
  }
  return new Worker(new URL('./entry.cjs', import.meta.url), { workerData, argv: [fileURLToPath(new URL(`./${name}.js`, import.meta.url))] });
}
