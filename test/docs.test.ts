import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configTableMarkdown } from '../src/config.js';
import { errorTableMarkdown } from '../src/http/openapi.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

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
