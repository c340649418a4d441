import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configTableMarkdown } from '../src/config.js';
import { errorTableMarkdown } from '../src/http/openapi.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  license: string;
  scripts: Record<string, string>;
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
  const license = readFileSync(new URL('../LICENSE', import.meta.url), 'utf8');
  assert.equal(pkg.license, 'MIT');
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 plantstore authors\n/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
});
