// Compiles the client package (packages/client/src to its dist/) and then the server (src/ to dist/),
// which imports the client's declarations, and copies what tsc does not: the SQL migrations. Each build
// goes to a folder of its own and replaces the old one only when complete, so a `plantstore` command run
// while `npm start` builds finds the old dist/ or the new one, never a half-written one.
import { execFileSync } from 'node:child_process';
import { cpSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// typescript's package "exports" do not include its bin, so the file is named directly.
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

/** Runs tsc on `project` into a new folder, lets `finish` add to it, then puts it in place as `outDir`. */
function build(project, outDir, finish = () => {}) {
  const next = `${outDir}.building-${process.pid}`;
  try {
    execFileSync(process.execPath, [tsc, '-p', project, '--outDir', next], { stdio: 'inherit' });
    finish(next);
    rmSync(outDir, { recursive: true, force: true });
    renameSync(next, outDir);
  } finally {
    rmSync(next, { recursive: true, force: true });
  }
}

build('packages/client/tsconfig.json', 'packages/client/dist');
build('tsconfig.build.json', 'dist', (next) => cpSync('src/store/migrations', `${next}/store/migrations`, { recursive: true }));
