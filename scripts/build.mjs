// Compiles the client package (packages/client/src to its dist/) and then the server (src/ to dist/),
// which imports the client's declarations, and copies what tsc does not: the SQL migrations. Each build
// goes to a folder of its own and replaces the old one only when complete, so a `plantstore` command run
// while `npm start` builds finds the old dist/ or the new one, never a half-written one.
//
// Two builds may run at once in one checkout (two `npm start`, an editor's build beside `npm test`).
// Neither removes a folder the other may be filling or reading: each moves the old output aside under a
// name of its own before putting its output in place, and an output already in place that is the same
// as this build's is kept (a server or tsc reading it is not disturbed, and the build that finishes
// second has nothing to replace).
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// typescript's package "exports" do not include its bin, so the file is named directly.
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

/** Whether the folders `a` and `b` hold the same files with the same contents (false if either is missing). */
function sameTree(a, b) {
  let names;
  try {
    names = [a, b].map((dir) => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length)).sort());
  } catch (e) {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return false;
    throw e;
  }
  const [ours, theirs] = names;
  return ours.length === theirs.length && ours.every((name, i) => name === theirs[i] && readFileSync(a + name).equals(readFileSync(b + name)));
}

/** Puts the complete build `next` in place as `outDir`, unless `outDir` holds the same already. */
function install(next, outDir) {
  const old = `${outDir}.old-${process.pid}`;
  for (;;) {
    if (sameTree(next, outDir)) return;
    try {
      renameSync(outDir, old);
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
    }
    try {
      renameSync(next, outDir);
      return;
    } catch (e) {
      // Another build put its output in place between the two renames: compare with that one.
      if (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e;
    } finally {
      rmSync(old, { recursive: true, force: true });
    }
  }
}

/** Runs tsc on `project` into a new folder, lets `finish` add to it, then puts it in place as `outDir`. */
function build(project, outDir, finish = () => {}) {
  const next = `${outDir}.building-${process.pid}`;
  try {
    execFileSync(process.execPath, [tsc, '-p', project, '--outDir', next], { stdio: 'inherit' });
    finish(next);
    install(next, outDir);
  } finally {
    rmSync(next, { recursive: true, force: true });
  }
}

build('packages/client/tsconfig.json', 'packages/client/dist');
build('tsconfig.build.json', 'dist', (next) => cpSync('src/store/migrations', `${next}/store/migrations`, { recursive: true }));
