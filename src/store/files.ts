// What the commands that write files do with a SQLite store's own files, outside any Store (open.ts
// opens those): `backup` copies the store (PostgreSQL's backup is pg_dump's), and `backup` and `export`
// refuse an output that is one of the store's files. cli/ reaches the SQLite backend through this
// module, open.ts and inspect.ts only (test/contract/layout.test.ts).
export { backupSqlite, type BackupOptions, type BackupProgress, type BackupResult } from './sqlite/backup.js';
export { storeFileProblem } from './sqlite/own-files.js';
