import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { ROOT } from './checkout.js';
import { outputOf, type CliResult } from './process.js';

/**
 * The packages as a user gets them: `npm pack` run for real, in a copy of the checkout, so that its
 * prepack and prepare scripts build there and never replace the dist/ folders that other tests of the
 * same run are importing; then `npm install` of the tarball into an empty project. The npm cache serves
 * what the registry would (--prefer-offline), so a machine that ran `npm ci` installs with no network.
 */

/**
 * Past this a command counts as hung, so that a run still ends by itself. It is a guard, not a
 * measure: compiling better-sqlite3 at a low priority while the rest of the suite keeps both cores busy
 * is the longest command, and on a slow machine it took longer than a tighter bound allowed.
 */
const COMMAND_TIMEOUT_MS = 30 * 60_000;

/** Runs a command to its end; `env` is added to this process's environment. */
export async function run(command: string, args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  return outputOf(spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: COMMAND_TIMEOUT_MS }));
}

/**
 * Runs `npm`, failing the test with its output when it fails. No audit, fund or update notices. At a
 * lower priority: its builds (tsc, a C++ compiler) would otherwise take the CPU from the tests running
 * beside it, some of which measure time.
 */
export async function npm(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  const result = await run('nice', ['-n', '10', 'npm', ...args, '--no-audit', '--no-fund', '--no-update-notifier'], cwd, env);
  assert.equal(result.code, 0, `npm ${args.join(' ')} in ${cwd} failed:\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** A temporary folder removed when the test ends. */
export function scratch(t: TestContext, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `plantstore-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What the client package's source folder holds besides what it builds. */
const CLIENT_FILES = ['package.json', 'tsconfig.json', 'src', 'README.md', 'CHANGELOG.md', 'LICENSE'];
/** What the server's build and pack read from the checkout. */
const SERVER_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'src', 'scripts/build.mjs', 'scripts/pack.mjs', 'README.md', 'CHANGELOG.md', 'LICENSE'];

/**
 * A copy of the checkout's sources in `dir` (without dist/, so a tarball with dist/ in it was built by
 * the pack), with a node_modules of links to the checkout's packages, except the workspace's link to the
 * client, which points at the copy's own packages/client, as npm's would.
 */
export function copyCheckout(dir: string): string {
  for (const file of SERVER_FILES) cpSync(join(ROOT, file), join(dir, file), { recursive: true });
  for (const file of CLIENT_FILES) cpSync(join(ROOT, 'packages/client', file), join(dir, 'packages/client', file), { recursive: true });
  mkdirSync(join(dir, 'node_modules/@plantstore'), { recursive: true });
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== '@plantstore' && name !== '.package-lock.json') symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  }
  symlinkSync('../../packages/client', join(dir, 'node_modules/@plantstore/client'));
  return dir;
}

export interface Packed {
  /** The tarball's path. */
  readonly tarball: string;
  /** The paths in it, as `npm pack --json` lists them (package/ left off). */
  readonly files: readonly string[];
}

/** `npm pack` in `dir` (its prepack and prepare scripts run), the tarball written to `destination`. */
export async function pack(dir: string, destination: string, env: Record<string, string> = {}): Promise<Packed> {
  const { stdout } = await npm(['pack', '--json', '--pack-destination', destination], dir, env);
  // The scripts' own output may come first; the JSON is an array starting on a line of its own.
  const [info] = JSON.parse(stdout.slice(stdout.search(/^\[$/m))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  assert.ok(info, stdout);
  return { tarball: join(destination, info.filename), files: info.files.map((f) => f.path).sort() };
}

/** An empty project in `dir` with this package.json, ready for `npm install` of a tarball. */
export function emptyProject(dir: string, manifest: object): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ private: true, ...manifest }, null, 2)}\n`);
  return dir;
}
