#!/usr/bin/env node
// The CLI runs the compiled code in dist/, which `npm install` builds (the "prepare" script).
let cli;
try {
  cli = await import('../dist/cli/index.js');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
  console.error('plantstore: dist/ is missing; run "npm install" (or "npm run build") in the checkout first.');
  process.exit(1);
}
// exitCode, not exit(): `serve` returns while the server keeps running.
process.exitCode = await cli.main(process.argv.slice(2), {
  env: process.env, stdout: process.stdout, stderr: process.stderr, stdin: () => process.stdin, cwd: process.cwd(),
});
