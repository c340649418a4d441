import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/*
 * The one place that loads better-sqlite3: src/store, the tests, bench/ and scripts/ all import it from
 * here. Two majors, because neither runs on every Node.js line plantstore supports:
 *
 * - better-sqlite3 13 (the optional dependency `better-sqlite3-napi`, an npm alias) is a Node-API addon
 *   built for Node-API 10: Node 22.14.0 and later, every Node 24. On Node 20 (Node-API 9) it crashes in
 *   `new Database()` (SIGSEGV, seen on 20.20.2; and on 22.13.1). Its engines say >=22, so npm skips it
 *   on Node 20 without a warning.
 * - better-sqlite3 12 (the dependency `better-sqlite3`) loads on Node 20, but compiled against the
 *   headers of Node 24.19 or later it aborts the process during a garbage collection ("Assertion failed:
 *   (env) != nullptr" in node::RemoveEnvironmentCleanupHook, from Statement::~Statement): since 24.19,
 *   node_object_wrap.h, compiled into every addon that uses node::ObjectWrap, removes a cleanup hook in
 *   each wrapped object's destructor, which fails when V8 runs it outside any context (nodejs/node#65446,
 *   open; better-sqlite3's report was closed without a fix). Node-API addons do not use that header.
 *
 * So: 13 wherever Node-API 10 exists and npm installed it, else 12. When Node 20 support ends, make
 * better-sqlite3 ^13 the dependency, drop the alias and this choice.
 */

const require = createRequire(import.meta.url);

/** The optional dependency `"better-sqlite3-napi": "npm:better-sqlite3@^13…"` (package.json). */
const NAPI_DRIVER = 'better-sqlite3-napi';
const LEGACY_DRIVER = 'better-sqlite3';

function installed(specifier: string): boolean {
  try {
    require.resolve(specifier);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return false;
    throw error;
  }
}

const napiVersion = Number(process.versions.napi ?? 0);
const napiInstalled = napiVersion >= 10 && installed(NAPI_DRIVER);
const specifier = napiInstalled ? NAPI_DRIVER : LEGACY_DRIVER;

/** Which better-sqlite3 this process runs, for the start-up log, the tests and worker threads. */
export const sqliteDriver: {
  /** The name it is installed under in node_modules. */
  readonly specifier: string;
  /** Its package.json version, e.g. "13.2.0". */
  readonly version: string;
  /** Its entry file (the worker threads, store/sqlite/workers/, import this module and so load the same one). */
  readonly path: string;
  /** Set where Node-API 10 exists but the 13 driver is missing, so 12 runs where it may abort. */
  readonly warning: string | undefined;
} = {
  specifier,
  version: (require(`${specifier}/package.json`) as { version: string }).version,
  path: require.resolve(specifier),
  warning:
    napiVersion >= 10 && !napiInstalled
      ? `better-sqlite3 13 (the optional dependency ${NAPI_DRIVER}) is not installed, so better-sqlite3 12 runs, ` +
        'which Node.js 24.19 and later can abort during garbage collection (nodejs/node#65446); run npm install on this Node.js'
      : undefined,
};

/*
 * One set of types for both: @types/better-sqlite3 (better-sqlite3 13 ships none). It describes the API
 * of 12, which 13 keeps (13 adds to it: explain(), opening a file descriptor), and plantstore uses only
 * that API; the suite runs on both majors. `require` returns `any`: this cast is the one place it is typed.
 */
const Database = require(specifier) as typeof BetterSqlite3;

// Type-only, so that `Database.Database` and `Database.Statement<…>` read as they do with
// `import Database from 'better-sqlite3'`, which this module replaces.
declare namespace Database {
  type Database = BetterSqlite3.Database;
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BetterSqlite3.Statement<BindParameters, Result>;
  type Options = BetterSqlite3.Options;
  type RunResult = BetterSqlite3.RunResult;
}

export default Database;
