import { describeStore } from '../config/database.js';
import { loadDatabaseConfig } from '../config/load.js';
import { openTransferStore } from '../store/open.js';
import { parse, UsageError } from './args.js';
import { DATABASE_OPTION, withOpenedStore, withStore } from './store.js';

// The commands that move the store as a whole: its schema (migrate), a copy (backup), and its contents
// out and in (export, import).

const MIGRATE_HELP = `Usage: plantstore migrate [--database-url URL]

Applies pending migrations (serve also does this at start). DATABASE_URL is read when the flag is absent.`;

export async function migrateCommand(args: string[]): Promise<void> {
  const { values } = parse(args, DATABASE_OPTION);
  if (values.help) return void console.log(MIGRATE_HELP);
  let applied: readonly string[] = [];
  await withStore(
    values['database-url'],
    async (store) => {
      const done = applied.length === 0 ? 'No migrations were pending' : `Applied ${applied.length === 1 ? 'migration' : 'migrations'} ${applied.join(', ')}`;
      console.log(`${done}; the ${store.backend} store is up to date.`);
    },
    { onMigrated: (names) => (applied = names) },
  );
}

const BACKUP_HELP = `Usage: plantstore backup --out FILE [--force] [--database-url URL]

Copies the SQLite store to FILE with SQLite's online backup API: a consistent copy of everything committed
when the copy began, made while the server keeps serving and writing. The copy is one standalone file,
checked with PRAGMA integrity_check; FILE appears only once it is complete. It holds token hashes and
webhook signing secrets: keep it as safe as the store. Prints the file, its size and its plant count.

  --out FILE          Where the copy goes; its directory must exist
  --force             Replace FILE if it exists (never the store itself)
  --database-url URL  The store to copy; default: DATABASE_URL, else sqlite:./data/plantstore.db

To restore: stop the server, then point DATABASE_URL at the copy, or move the copy over the store file
(removing the old store's -wal and -shm files first). On PostgreSQL use pg_dump and pg_restore (README,
"Backups").`;

export async function backupCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, out: { type: 'string' }, force: { type: 'boolean' } });
  if (values.help) return void console.log(BACKUP_HELP);
  if (values.out === undefined || values.out === '') throw new UsageError('backup needs --out FILE');
  const { database } = loadDatabaseConfig(values['database-url']);
  if (database.kind !== 'sqlite') {
    throw new UsageError(
      'backup copies SQLite stores; back up PostgreSQL with its own tools: pg_dump --format=custom --file=plantstore.dump "$DATABASE_URL" ' +
        '(restore with pg_restore; see "Backups" in the README)',
    );
  }
  console.error(`using ${describeStore(database, 'url')}`);
  const { backupSqlite } = await import('../store/sqlite/backup.js');
  const copy = await backupSqlite(database.path, values.out, { force: values.force ?? false });
  if (copy.removedTemporaries.length > 0) {
    console.error(`removed what interrupted backups or exports had left beside ${copy.path}: ${copy.removedTemporaries.join(', ')}`);
  }
  console.log(`Backed up ${describeStore(database, 'url')} to ${copy.path}: ${copy.bytes} bytes, ${copy.plants} plants, integrity_check ok.`);
}

const EXPORT_HELP = `Usage: plantstore export [--out FILE] [--force] [--database-url URL]

  --out FILE          Where to write; default (or -): stdout, which must not be a terminal
  --force             Replace FILE if it exists (a pipe or a device, such as /dev/null, is written into);
                      never the SQLite store itself or its -wal, -shm, -journal or .lock
  --database-url URL  The store to export; default: DATABASE_URL, else sqlite:./data/plantstore.db

Writes every plant (with its owner and exact id), token (its hash; no secret exists), webhook endpoint
(with its signing secret) and pending webhook event, in creation order, from one snapshot: NDJSON with a
header line. FILE appears only once complete and on disk, with mode 0600: it holds webhook secrets, so
keep it as private as the store, and out of version control. The store may serve requests meanwhile.
The summary goes to stderr.
See README "Moving between stores (export and import)".`;

export async function exportCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, out: { type: 'string' }, force: { type: 'boolean' } });
  if (values.help) return void console.log(EXPORT_HELP);
  const out = values.out ?? '-';
  if (out === '') throw new UsageError('--out needs a file name (or - for stdout)');
  if (out === '-' && process.stdout.isTTY) {
    throw new UsageError('export writes the whole store, webhook secrets included, to stdout: redirect it to a file, or give --out FILE');
  }
  const { database } = loadDatabaseConfig(values['database-url']);
  if (database.kind === 'sqlite') {
    // As backup does: renamed over the -wal (or the store, or its lock), the file would take every
    // acknowledged write with it at the next crash. stdout too may have been redirected there.
    const { storeFileProblem } = await import('../store/sqlite/own-files.js');
    const problem = storeFileProblem(out === '-' ? process.stdout.fd : out, database.path);
    if (problem !== undefined) throw new Error(`cannot export to ${out === '-' ? 'stdout' : out}: ${problem}`);
  }
  const { runExport } = await import('../transfer/export.js');
  await withOpenedStore(
    values['database-url'],
    (location, options) => openTransferStore(location, { ...options, importing: false }),
    (store) => runExport(store, out, (line) => console.error(line), { force: values.force ?? false }),
    { mustExist: true },
  );
}

const IMPORT_HELP = `Usage: plantstore import FILE [--skip-conflicts] [--database-url URL]

  FILE                A file written by "plantstore export"; - reads stdin
  --skip-conflicts    Keep what the store holds where a record's key is stored with other content,
                      and import the rest (default: stop at the first such batch, exit 1)
  --database-url URL  The store to load into (SQLite or PostgreSQL); default: DATABASE_URL, else
                      sqlite:./data/plantstore.db

Loads in batches of 1,000 in file order, each committed on its own, keeping ids, hashes, secrets and
times. A record already stored with the same content is left alone, so importing twice changes nothing
and a failed import can be run again. Stop the SQLite store's server first (an import holds its lock).`;

export async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, 'skip-conflicts': { type: 'boolean' } }, true);
  if (values.help) return void console.log(IMPORT_HELP);
  const [path, ...extra] = positionals;
  if (path === undefined || path === '' || extra.length > 0) throw new UsageError('import needs one FILE (written by "plantstore export"; - for stdin)');
  const { openImportFile, readImportHeader, runImport } = await import('../transfer/import.js');
  const file = await openImportFile(path);
  try {
    // Before the store opens: a file that is not an export creates no store.
    const source = await readImportHeader(file.input);
    await withOpenedStore(
      values['database-url'],
      (location, options) => openTransferStore(location, { ...options, importing: true }),
      (store) => runImport(store, file.name, source, { skipConflicts: values['skip-conflicts'] ?? false, log: (line) => console.error(line) }),
    );
  } finally {
    await file.close();
  }
}
