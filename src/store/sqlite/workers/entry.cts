// The entry of a worker thread started from dist/ (start.ts): CommonJS, so that the thread's module, an
// ES module named by argv[2], is loaded by require(), which reads its files synchronously. An ES module
// entry would be read through libuv's thread pool, which dns.lookup may keep busy (see wal.ts).
require(process.argv[2] as string);
