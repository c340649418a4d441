// The entry of a worker thread started from the TypeScript sources under tsx (the tests, bench/; see
// start.ts): registers tsx's CommonJS hooks, then requires the thread's module, named by argv[2], as
// entry.cts does from dist/ (synchronously: no file read waits for libuv's thread pool). Not built into
// dist/, and not shipped.
require('tsx/cjs/api').register();
require(process.argv[2]);
