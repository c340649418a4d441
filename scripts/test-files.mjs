// Runs several compiled test files in one process (scripts/test.mjs): imports each in turn, and
// node:test runs every test they declare, one after another, in one report. The files must not declare
// top-level hooks (before, after), which would apply to all of them: test.mjs gives such files a
// process of their own.
import { pathToFileURL } from 'node:url';

for (const file of process.argv.slice(2)) await import(pathToFileURL(file).href);
