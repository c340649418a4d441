// Compiles src/ to dist/ and copies what tsc does not: the SQL migrations.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// typescript's package "exports" do not include its bin, so the file is named directly.
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
cpSync('src/store/migrations', 'dist/store/migrations', { recursive: true });
