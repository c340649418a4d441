import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { pagePath, TABLES, withTable } from '../../scripts/docs-tables.js';

const page = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const readme = page('README.md');
const development = page('docs/development.md');
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  license: string;
  scripts: Record<string, string>;
  engines: { node: string };
};

/** The section of `text` under `## title`, up to the next `## `. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `the page has a "## ${title}" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

for (const table of TABLES) {
  test(`${table.page} holds ${table.name} as the code makes it (npm run docs:tables writes it)`, () => {
    const text = readFileSync(pagePath(table.page), 'utf8');
    assert.ok(text.includes(table.markdown()), `${table.page} must contain:\n${table.markdown()}\n(npm run docs:tables writes it)`);
    assert.equal(withTable(text, table), text, `${table.page}: run npm run docs:tables`);
  });
}

test('the README gives the set-up commands CI runs, and stays short', () => {
  assert.match(section(readme, 'Set up'), /^npm install\s/m);
  assert.match(section(readme, 'Set up'), /npm test/);
  const lines = readme.split('\n').length - 1;
  assert.ok(lines <= 250, `README.md has ${lines} lines; at most 250 (the rest belongs under docs/)`);
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

test('CI runs the suite on every Node.js line engines names, and the development page says on which releases', () => {
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
  assert.match(ci, /^tests_of machine\n[\s\S]*^for key in "\$\{NODE_RELEASES\[@\]\}"; do tests_of "\$key"; done$/m, '.ci/run runs the tests on the machine\'s Node, then on each release');
  assert.match(ci, /^    record "\$what" npm test$/m, '.ci/run runs the whole suite on the machine\'s Node');
  assert.ok(lines.some((line) => within(process.versions.node, line)), `this Node, ${process.version}, is one engines names`);

  const nodeReleases = section(development, 'Node.js releases');
  assert.match(nodeReleases, new RegExp(`Tested on Node\\.js 20 \\(the machine's own[^)]*\\), ${releases.join(' and ').replaceAll('.', '\\.')}`));
  assert.ok(nodeReleases.includes(`\`${pkg.engines.node}\``), 'Node.js releases quotes engines');
  for (const release of releases) assert.ok(section(development, 'CI').includes(release), `CI names ${release}`);
});

test('npm start builds from src/ before serving, as the docs say', () => {
  // npm runs "prestart" before "start": the server started by npm start is the code in src/ now.
  assert.equal(pkg.scripts.prestart, 'node scripts/build.mjs');
  assert.match(pkg.scripts.start ?? '', /^node bin\/plantstore\.js serve$/);
  assert.match(section(page('docs/production.md'), 'Under a process manager'), /`npm start` builds `src\/` into `dist\/` first/);
});

test('the Quick start works with any PORT: every URL uses the shell variable', () => {
  const quickStart = section(readme, 'Quick start');
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
