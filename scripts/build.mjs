// Compiles src/ to dist/ and copies what tsc does not: the SQL migrations. The build goes to a folder of
// its own and replaces dist/ only when complete, so a `plantstore` command run while `npm start` builds
// finds the old dist/ or the new one, never none (it used to be deleted first, for the whole build).
import { execFileSync } from 'node:child_process';
import { cpSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// typescript's package "exports" do not include its bin, so the file is named directly.
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
const next = `dist.building-${process.pid}`;
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', next], { stdio: 'inherit' });
  cpSync('src/store/migrations', `${next}/store/migrations`, { recursive: true });
  rmSync('dist', { recursive: true, force: true });
  renameSync(next, 'dist');
} finally {
  rmSync(next, { recursive: true, force: true });
}
