import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configTableMarkdown, errorTableMarkdown } from '../../scripts/docs-tables.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  license: string;
  scripts: Record<string, string>;
  engines: { node: string };
};

/** The README's section under `## title`, up to the next `## `. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `README has a "## ${title}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

test('the README error table is the code\'s error table', () => {
  assert.ok(readme.includes(errorTableMarkdown()), `README.md must contain:\n${errorTableMarkdown()}`);
});

test('the README configuration table is the code\'s option table', () => {
  assert.ok(readme.includes(configTableMarkdown()), `README.md must contain:\n${configTableMarkdown()}`);
});

test('the README gives the set-up commands CI runs', () => {
  assert.match(readme, /npm install && npm start/);
  assert.match(readme, /npm test/);
});

/** `^major.minor.patch` → its numbers; `20.20.2` → its numbers. */
function numbers(version: string): [number, number, number] {
  const m = /^\^?(\d+)\.(\d+)\.(\d+)$/.exec(version);
  assert.ok(m, `${version} is [^]major.minor.patch`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Whether `version` is within the caret range `line` (same major, at or above its floor). */
function within(version: string, line: string): boolean {
  const [major, minor, patch] = numbers(version);
  const [lMajor, lMinor, lPatch] = numbers(line);
  return major === lMajor && (minor > lMinor || (minor === lMinor && patch >= lPatch));
}

test('CI runs the suite on every Node.js line engines names, and the README says on which releases', () => {
  const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');
  const releases = /^NODE_RELEASES=\(([^)]*)\)$/m.exec(ci)?.[1]?.split(' ') ?? [];
  const lines = pkg.engines.node.split(' || ');
  assert.ok(releases.length > 0, '.ci/run pins NODE_RELEASES');
  for (const release of releases) {
    assert.equal(lines.filter((line) => within(release, line)).length, 1, `${release} is within one line of engines (${pkg.engines.node})`);
  }
  assert.equal(new Set(releases.map((r) => numbers(r)[0])).size, releases.length, 'one pinned release per line');
  // The line left without a pinned release is the machine's own, Node 20 on the development and CI
  // machines: .ci/run's first run (npm ci, npm test on the machine's Node) tests it.
  const unpinned = lines.filter((line) => !releases.some((release) => within(release, line)));
  assert.deepEqual(unpinned.map((line) => numbers(line)[0]), [20], 'only the machine\'s line (20) is unpinned');
  assert.match(ci, /^record "Node \$\(node --version\) \(the machine's\)[^"]*" machine_run$/m, '.ci/run runs the suite on the machine\'s Node');
  assert.ok(lines.some((line) => within(process.versions.node, line)), `this Node, ${process.version}, is one engines names`);

  const setUp = section('Set up');
  assert.match(setUp, new RegExp(`Tested on Node\\.js 20 \\(the machine's own[^)]*\\), ${releases.join(' and ').replaceAll('.', '\\.')}`));
  assert.ok(setUp.includes(`\`${pkg.engines.node}\``), 'Set up quotes engines');
  for (const release of releases) assert.ok(section('Development').includes(release), `Development names ${release}`);
});

test('npm start builds from src/ before serving, as the README says', () => {
  // npm runs "prestart" before "start": the server started by npm start is the code in src/ now.
  assert.equal(pkg.scripts.prestart, 'node scripts/build.mjs');
  assert.match(pkg.scripts.start ?? '', /^node bin\/plantstore\.js serve$/);
  assert.match(section('Set up'), /`npm start` compiles `src\/` to `dist\/` first/);
});

test('the Quick start works with any PORT: every URL uses the shell variable', () => {
  const quickStart = section('Quick start');
  assert.match(quickStart, /export PORT=\$\{PORT:-8080\}/);
  const urls = quickStart.match(/http:\/\/[^\s"']+/g) ?? [];
  assert.ok(urls.length >= 2, quickStart);
  for (const url of urls) assert.match(url, /^http:\/\/127\.0\.0\.1:\$PORT\//);
});

test('a LICENSE file holds the license package.json names', () => {
  const license = readFileSync(new URL('../../LICENSE', import.meta.url), 'utf8');
  assert.equal(pkg.license, 'MIT');
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 plantstore authors\n/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
});
