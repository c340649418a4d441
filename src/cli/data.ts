import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { describeStore } from '../config/database.js';
import { loadDatabaseConfig } from '../config/load.js';
import { openTransferStore } from '../store/open.js';
import { parse, UsageError } from './args.js';
import { startProgress, type Progress } from './progress.js';
import { DATABASE_OPTION, withOpenedStore, withStore } from './store.js';
import type { Cli } from './io.js';

const QUIET_OPTION = { quiet: { type: 'boolean', short: 'q' } } as const;

/** Runs `work`; when it fails, the progress line is cleared first, so that the error has a line of its own. */
async function withProgress<T>(progress: Progress, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    progress.stop();
    throw error;
  }
}

// The commands that move the store as a whole: its schema (migrate), a copy (backup), and its contents
// out and in (export, import).

const MIGRATE_HELP = `Usage: plantstore migrate [--database-url URL] [--config FILE]

Applies pending migrations (serve also does this at start). DATABASE_URL is read when the flag is absent,
from the environment, else from the settings file (--config FILE, or PLANTSTORE_CONFIG=FILE).
"plantstore doctor" lists the pending migrations without applying them.`;

export async function migrateCommand(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, DATABASE_OPTION);
  if (values.help) return void cli.print(MIGRATE_HELP);
  let applied: readonly string[] = [];
  await withStore(
    cli,
    values['database-url'],
    async (store) => {
      const done = applied.length === 0 ? 'No migrations were pending' : `Applied ${applied.length === 1 ? 'migration' : 'migrations'} ${applied.join(', ')}`;
      cli.print(`${done}; the ${store.backend} store is up to date.`);
    },
    { onMigrated: (names) => (applied = names) },
  );
}

const BACKUP_HELP = `Usage: plantstore backup --out FILE [--force] [--quiet] [--database-url URL]

Copies the SQLite store to FILE with SQLite's online backup API: a consistent copy of everything committed
when the copy began, made while the server keeps serving and writing. The copy is one standalone file,
checked with PRAGMA integrity_check; FILE appears only once it is complete. It holds token hashes and
webhook signing secrets: keep it as safe as the store. Prints the file, its size and its plant count.

  --out FILE          Where the copy goes; its directory must exist
  --force             Replace FILE if it exists (never the store itself)
  --quiet             Print nothing but errors (no progress, no summary)
  --database-url URL  The store to copy; default: DATABASE_URL, else sqlite:./data/plantstore.db
  --config FILE       Read DATABASE_URL (and any other setting) from FILE, KEY=value lines; also
                      PLANTSTORE_CONFIG=FILE. A flag or variable wins over it.

On a terminal, stderr shows the pages copied so far, the rate, the time elapsed and an estimate of the
time left, then the check; elsewhere only the summary line is printed.

To restore: stop the server, then point DATABASE_URL at the copy, or move the copy over the store file
(removing the old store's -wal and -shm files first). On PostgreSQL use pg_dump and pg_restore (README,
"Backups").`;

export async function backupCommand(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, ...QUIET_OPTION, out: { type: 'string' }, force: { type: 'boolean' } });
  if (values.help) return void cli.print(BACKUP_HELP);
  const quiet = values.quiet ?? false;
  if (values.out === undefined || values.out === '') throw new UsageError('backup needs --out FILE');
  const { database } = loadDatabaseConfig(values['database-url'], cli.env, cli.cwd);
  if (database.kind !== 'sqlite') {
    throw new UsageError(
      'backup copies SQLite stores; back up PostgreSQL with its own tools: pg_dump --format=custom --file=plantstore.dump "$DATABASE_URL" ' +
        '(restore with pg_restore; see "Backups" in the README)',
    );
  }
  if (!quiet) cli.warn(`using ${describeStore(database, 'url')}`);
  const { backupSqlite } = await import('../store/files.js');
  const progress = startProgress({ label: 'backing up', unit: 'pages', quiet, stream: cli.stderr });
  const copy = await withProgress(progress, () => backupSqlite(database.path, resolve(cli.cwd, values.out as string), { force: values.force ?? false, progress }));
  progress.done(copy.removedTemporaries.length > 0 ? [`removed what interrupted backups or exports had left beside ${copy.path}: ${copy.removedTemporaries.join(', ')}`] : []);
  if (!quiet) cli.print(`Backed up ${describeStore(database, 'url')} to ${copy.path}: ${copy.bytes} bytes, ${copy.plants} plants, integrity_check ok.`);
}

const EXPORT_HELP = `Usage: plantstore export [--out FILE] [--force] [--quiet] [--database-url URL]

  --out FILE          Where to write; default (or -): stdout, which must not be a terminal
  --force             Replace FILE if it exists (a pipe or a device, such as /dev/null, is written into);
                      never the SQLite store itself or its -wal, -shm, -journal or .lock
  --quiet             Print nothing but errors (no progress, no summary)
  --database-url URL  The store to export; default: DATABASE_URL, else sqlite:./data/plantstore.db
  --config FILE       Read DATABASE_URL (and any other setting) from FILE, KEY=value lines; also
                      PLANTSTORE_CONFIG=FILE. A flag or variable wins over it.

Writes every plant (with its owner and exact id), token (its hash; no secret exists), webhook endpoint
(with its signing secret) and pending webhook event, in creation order, from one snapshot: NDJSON with a
header line. FILE appears only once complete and on disk, with mode 0600: it holds webhook secrets, so
keep it as private as the store, and out of version control. The store may serve requests meanwhile.
The summary goes to stderr; on a terminal, stderr also shows the records written so far, the rate, the
time elapsed and an estimate of the time left. See docs/backups.md, "Moving between stores".`;

export async function exportCommand(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, ...QUIET_OPTION, out: { type: 'string' }, force: { type: 'boolean' } });
  if (values.help) return void cli.print(EXPORT_HELP);
  const quiet = values.quiet ?? false;
  const out = values.out ?? '-';
  if (out === '') throw new UsageError('--out needs a file name (or - for stdout)');
  if (out === '-' && cli.stdout.isTTY === true) {
    throw new UsageError('export writes the whole store, webhook secrets included, to stdout: redirect it to a file, or give --out FILE');
  }
  const { database } = loadDatabaseConfig(values['database-url'], cli.env, cli.cwd);
  if (database.kind === 'sqlite') {
    // As backup does: renamed over the -wal (or the store, or its lock), the file would take every
    // acknowledged write with it at the next crash. stdout too may have been redirected there (a
    // stdout without a descriptor, a test's stream, is no file).
    const { storeFileProblem } = await import('../store/files.js');
    const target = out === '-' ? cli.stdout.fd : resolve(cli.cwd, out);
    const problem = target === undefined ? undefined : storeFileProblem(target, database.path);
    if (problem !== undefined) throw new Error(`cannot export to ${out === '-' ? 'stdout' : out}: ${problem}`);
  }
  const { runExport } = await import('../transfer/export.js');
  await withOpenedStore(
    cli,
    values['database-url'],
    (location, options) => openTransferStore(location, { ...options, importing: false }),
    async (store) => {
      const progress = startProgress({ label: 'exporting', unit: 'records', quiet, stream: cli.stderr });
      const options = { cwd: cli.cwd, force: values.force ?? false, progress, stdout: cli.stdout };
      const summary = await withProgress(progress, () => runExport(store, out, progress.log, options));
      progress.done(summary);
    },
    { mustExist: true, quiet },
  );
}

const IMPORT_HELP = `Usage: plantstore import FILE [--skip-conflicts] [--quiet] [--database-url URL]

  FILE                A file written by "plantstore export"; - reads stdin
  --skip-conflicts    Keep what the store holds where a record's key is stored with other content,
                      and import the rest (default: stop at the first such batch, exit 1)
  --quiet             Print nothing but errors (no progress, no notices, no summary)
  --database-url URL  The store to load into (SQLite or PostgreSQL); default: DATABASE_URL, else
                      sqlite:./data/plantstore.db
  --config FILE       Read DATABASE_URL (and any other setting) from FILE, KEY=value lines; also
                      PLANTSTORE_CONFIG=FILE. A flag or variable wins over it.

Loads in batches of 1,000 in file order, each committed on its own, keeping ids, hashes, secrets and
times. A record already stored with the same content is left alone, so importing twice changes nothing
and a failed import can be run again. Stop the SQLite store's server first (an import holds its lock).
The summary goes to stderr; on a terminal, stderr also shows the records imported so far (of those the
file's header announces), the rate, the time elapsed and an estimate of the time left.`;

export async function importCommand(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, ...QUIET_OPTION, 'skip-conflicts': { type: 'boolean' } }, true);
  if (values.help) return void cli.print(IMPORT_HELP);
  const quiet = values.quiet ?? false;
  const [path, ...extra] = positionals;
  if (path === undefined || path === '' || extra.length > 0) throw new UsageError('import needs one FILE (written by "plantstore export"; - for stdin)');
  const { openImportFile, readImportHeader, runImport } = await import('../transfer/import.js');
  const file = await openImportFile(path, cli.stdin ?? (() => Readable.from([])), cli.cwd);
  try {
    // Before the store opens: a file that is not an export creates no store.
    const source = await readImportHeader(file.input);
    await withOpenedStore(
      cli,
      values['database-url'],
      (location, options) => openTransferStore(location, { ...options, importing: true }),
      async (store) => {
        const progress = startProgress({ label: 'importing', unit: 'records', quiet, stream: cli.stderr });
        const options = { skipConflicts: values['skip-conflicts'] ?? false, log: progress.log, progress };
        progress.done(await withProgress(progress, () => runImport(store, file.name, source, options)));
      },
      { quiet },
    );
  } finally {
    await file.close();
  }
}
