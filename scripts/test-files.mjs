// Runs several compiled test files in one process (scripts/test.mjs): imports each in turn, and
// node:test runs every test they declare, one after another, in one report. A file that declares
// top-level hooks (before, after), which would apply to all of them, or that measures its process's
// memory, which would count its neighbours', gets a process of its own from test.mjs.
import { pathToFileURL } from 'node:url';

for (const file of process.argv.slice(2)) await import(pathToFileURL(file).href);
