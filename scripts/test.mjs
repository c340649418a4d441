// Runs the test suite once per backend: SQLite always, PostgreSQL when reachable. In CI (CI=true) an
// unreachable PostgreSQL fails the run instead of skipping it.
//   test/{api,store,cli,process}/*.test.ts  both backends (test/helpers/app.ts picks the store from the environment)
//   test/{unit,contract}/*.test.ts     no store of their own: once, in the SQLite run
//   test/sqlite/*.test.ts              SQLite only (file paths, the default store)
//   test/postgres/*.test.ts            PostgreSQL only (several instances, migrations racing, outages)
//
// Both backends' files share one pool of processes: most files spend most of their time waiting (for
// a process to start, a timer, a receiver), and another process computes meanwhile. Each process runs a
// few files, one after another (scripts/test-files.mjs): loading the app's modules costs a process about
// a second of CPU, as much as many files' tests. A line is printed as each process ends; the reports
// follow once all have ended, then every failure again, together, and the counts.
//
// The files run compiled, not under tsx: one tsc run type-checks the project and writes JavaScript into
// a folder of its own, shaped as the checkout, whose other files are links to the checkout's (so that
// a test's relative paths reach package.json, docs/, the migrations): loading every module through
// tsx's hooks, in every process, was much of the suite's time. Run alone, a file still runs from its
// sources: node --import tsx --test test/api/list.test.ts.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';
/**
 * Test processes at once. On two cores, enough for one process's waits to be another's computing, few
 * enough that a test's own timers do not slip.
 */
const PROCESSES_AT_ONCE = 8;
/**
 * Test files to a process, which runs them one after another: in-process files (which call the code)
 * four, files that start real processes (servers, CLI commands), whose time is mostly waiting, two. Few
 * enough that a process's files end with the rest; a failing test is still named by its file and line.
 */
const FILES_PER_PROCESS = { inProcess: 4, realProcesses: 2 };
const files = (dir) => readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => `${dir}/${f}`);
/**
 * A file that must have a process of its own: a top-level hook (before, after) would apply to every file
 * of its process, and a measure of the process's memory would count its neighbours'.
 */
const own = (file) => /^(before|after|beforeEach|afterEach)\(|process\.memoryUsage\(/m.test(readFileSync(file, 'utf8'));
/** The files, `size` to a process, except those that need their own. */
function grouped(list, size) {
  const together = list.filter((f) => !own(f));
  const groups = Array.from({ length: Math.ceil(together.length / size) }, (_, i) => together.slice(i * size, (i + 1) * size));
  return [...list.filter(own).map((f) => [f]), ...groups];
}
const real = (dir, list = files(dir)) => grouped(list, FILES_PER_PROCESS.realProcesses);
const inProcess = (dir, list = files(dir)) => grouped(list, FILES_PER_PROCESS.inProcess);
const argv = process.argv.slice(2);
const only = argv.filter((a) => !a.startsWith('--')); // e.g. `npm test -- sqlite` runs one backend
/**
 * Checks of the project's files rather than of the code as it runs: the documentation and its
 * examples' links, the OpenAPI document's lint, the code's layout, the metrics table, the generated
 * client types, the build script, the /docs page's assets in a browser. They answer alike on every
 * Node.js release, so CI runs them on the machine's only (.ci/run): `--skip-file-checks` leaves them out.
 */
const FILE_CHECKS = ['build', 'client-types', 'docs', 'docs-examples', 'docs-page', 'layout', 'metrics-table', 'openapi-lint']
  .map((name) => `test/contract/${name}.test.ts`);
for (const file of FILE_CHECKS) if (!existsSync(file)) throw new Error(`${file}, named in FILE_CHECKS, is not there`);
const skipFileChecks = argv.includes('--skip-file-checks');
const unknown = argv.filter((a) => a.startsWith('--') && a !== '--skip-file-checks');
if (unknown.length > 0) {
  console.error(`Unknown option ${unknown.join(' ')}: npm test -- [sqlite] [postgres] [--skip-file-checks]`);
  process.exit(2);
}
// Folders whose files take longest (real processes) first, so that no long file starts last. First of
// all the package tests (test/contract/*-package): packing and installing take longest, at a low
// priority (test/helpers/packages.ts), so they must start at once, each in a process of its own, to
// finish with the rest.
const BOTH = [...real('test/process'), ...['test/store', 'test/api', 'test/cli'].flatMap((dir) => inProcess(dir))];
const PACKAGES = files('test/contract').filter((f) => f.endsWith('-package.test.ts'));
const CONTRACT = files('test/contract').filter((f) => !PACKAGES.includes(f) && !(skipFileChecks && FILE_CHECKS.includes(f)));
const ONCE = [...inProcess('test/contract', CONTRACT), ...inProcess('test/unit')];
const FILES = {
  sqlite: [...PACKAGES.map((f) => [f]), ...real('test/sqlite'), ...ONCE, ...BOTH],
  postgres: [...real('test/postgres'), ...BOTH],
};

async function reachable(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    console.error(`PostgreSQL at ${url} is not reachable: ${error.message}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const runs = {}; // backend → database URL ('' for SQLite), or false when it fails without running
if (only.length === 0 || only.includes('sqlite')) runs.sqlite = '';
if (only.length === 0 || only.includes('postgres')) {
  const url = process.env.PLANTSTORE_TEST_DATABASE_URL || DEFAULT_URL;
  if (await reachable(url)) {
    runs.postgres = url;
  } else if (process.env.CI === 'true') {
    console.error('CI=true: the PostgreSQL run is required (.ci/run starts PostgreSQL first).');
    runs.postgres = false;
  } else {
    console.warn('\nWARNING: the PostgreSQL run was SKIPPED. Start PostgreSQL or set PLANTSTORE_TEST_DATABASE_URL.');
  }
}

// One queue, the backends' files taken in turn, each in its own order.
const jobs = [];
const backends = Object.keys(runs).filter((b) => runs[b] !== false);
for (let i = 0; backends.some((b) => i < FILES[b].length); i++) {
  for (const backend of backends) if (i < FILES[backend].length) jobs.push({ backend, files: FILES[backend][i] });
}
for (const backend of backends) console.log(`=== ${backend} on Node ${process.version}: ${FILES[backend].flat().length} test files ===`);

const reports = mkdtempSync(join(tmpdir(), 'plantstore-test-reports-'));
const compiled = mkdtempSync(join(tmpdir(), 'plantstore-test-build-'));
const compileCache = mkdtempSync(join(tmpdir(), 'plantstore-test-compile-cache-'));
process.on('exit', () => {
  for (const folder of [reports, compiled, compileCache]) rmSync(folder, { recursive: true, force: true });
});

/** Links each file and folder of `root` that `out` lacks, going into the folders both have. */
function linkTheRest(root, out, path = '') {
  for (const entry of readdirSync(join(root, path), { withFileTypes: true })) {
    const name = join(path, entry.name);
    if (name === '.git') continue; // not a work tree: a git command there must not take it for one
    const target = join(out, name);
    if (!existsSync(target)) symlinkSync(join(root, name), target);
    else if (entry.isDirectory() && statSync(target).isDirectory()) linkTheRest(root, out, name);
  }
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
try {
  execFileSync(process.execPath, [TSC, '-p', ROOT, '--outDir', compiled], { stdio: 'inherit' });
} catch {
  console.error('The type check failed (above): no test ran.');
  process.exit(1);
}
linkTheRest(ROOT, compiled);

/**
 * Runs one process's test files; resolves when it ended, its report and counts read. A single file is the
 * process's main module, several are imported in turn by scripts/test-files.mjs; never `--test`, which
 * would start a second process to run them. On Node.js 22 and later the processes, and the servers and
 * commands they start, share one compile cache, so that each module is compiled once in the run.
 */
function runFiles(job, index) {
  const started = performance.now();
  const report = join(reports, `${index}.txt`);
  const env = { ...process.env, PLANTSTORE_TEST_DATABASE_URL: runs[job.backend], NODE_COMPILE_CACHE: compileCache };
  const compiledFiles = job.files.map((f) => join(compiled, f.replace(/\.ts$/, '.js')));
  const main = compiledFiles.length === 1 ? compiledFiles : [join(ROOT, 'scripts/test-files.mjs'), ...compiledFiles];
  const args = ['--enable-source-maps', '--test-reporter=spec', `--test-reporter-destination=${report}`, ...main];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.on('close', (code) => {
      let text;
      try {
        text = readFileSync(report, 'utf8');
      } catch (error) {
        text = `no report from ${job.files.join(' ')}: ${error.message}\n`;
      }
      const count = (name) => Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      Object.assign(job, { ok: code === 0, text, tests: count('tests'), fail: count('fail'), seconds: (performance.now() - started) / 1000 });
      console.log(`${job.backend.padEnd(8)} ${job.ok ? 'ok  ' : 'FAIL'} ${job.seconds.toFixed(1).padStart(6)} s, ended at ${((performance.now() - runStart) / 1000).toFixed(0).padStart(4)} s  ${job.files.join(' ')} (${job.tests} tests)`);
      resolve();
    });
  });
}

const runStart = performance.now(); // the tests' own start, after the type check
let next = 0;
const worker = async () => {
  while (next < jobs.length) {
    const index = next++;
    await runFiles(jobs[index], index);
  }
};
await Promise.all(Array.from({ length: PROCESSES_AT_ONCE }, worker));

// The reports, SQLite's files first, without each file's counts (its line above has them) and its own
// closing list of failures: they are all listed once below, where CI's log reader (.ci/run) looks.
const FAILURES = /\n✖ failing tests:\n[\s\S]*$/;
const COUNTS = /^ℹ tests \d+\n(ℹ \w+ [\d.]+\n)*/m;
for (const backend of backends) {
  console.log(`\n=== ${backend} on Node ${process.version}: the reports ===`);
  for (const job of jobs.filter((j) => j.backend === backend)) process.stdout.write(job.text.replace(FAILURES, '\n').replace(COUNTS, ''));
}
const failed = jobs.filter((j) => !j.ok);
if (failed.length > 0) {
  console.log('\n✖ failing tests:');
  for (const job of failed) console.log(`\n(${job.backend}) ${FAILURES.exec(job.text)?.[0].replace('\n✖ failing tests:\n', '') ?? job.text.slice(-2000)}`);
}
const results = Object.fromEntries(Object.keys(runs).map((b) => [b, runs[b] !== false && jobs.every((j) => j.backend !== b || j.ok)]));
for (const backend of backends) {
  const mine = jobs.filter((j) => j.backend === backend);
  const tests = mine.reduce((n, j) => n + j.tests, 0);
  const fail = mine.reduce((n, j) => n + j.fail, 0);
  console.log(`ℹ tests ${tests} (${backend}: ${mine.flatMap((j) => j.files).length} files in ${mine.length} processes, ${mine.filter((j) => !j.ok).length} failed)\nℹ pass ${tests - fail}\nℹ fail ${fail}`);
}
console.log(`\n=== Node ${process.version}: ${Object.entries(results).map(([b, ok]) => `${b}: ${ok ? 'passed' : 'FAILED'}`).join(', ')} ===`);
process.exit(Object.values(results).every(Boolean) ? 0 : 1);
