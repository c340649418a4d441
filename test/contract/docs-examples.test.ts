import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { ROOT } from '../helpers/checkout.js';
import { documentationFiles, isExample, isJavaScript, isShell, readPage, type Page } from '../helpers/markdown.js';

/**
 * The documentation's examples and links, read without running anything: every shell and JavaScript
 * example is run by test/process/docs-examples.test.ts or says why not, every relative link and anchor
 * leads somewhere, and the pages name only tests that exist. (How a page marks its blocks:
 * test/helpers/markdown.ts.)
 */

const pages: readonly Page[] = documentationFiles().map(readPage);
const byPath = new Map(pages.map((p) => [p.path, p]));

test('every shell and JavaScript example is run, saved as a file to run, or says why it cannot run here', () => {
  const problems: string[] = [];
  for (const page of pages) {
    const streams = new Set<string>();
    for (const block of page.blocks) {
      const { note } = block;
      if (note.kind === 'stream') {
        if (!isShell(block)) problems.push(`${block.at}: a stream is a shell block`);
        streams.add(note.name);
      }
      if (note.kind === 'output') {
        if (isExample(block)) problems.push(`${block.at}: an output is shown in a text block, not a ${block.lang} one`);
        if (!streams.has(note.name)) problems.push(`${block.at}: the output of ${note.name}, which no stream block before it starts`);
      }
    }
    for (const block of page.blocks.filter(isExample)) {
      const { note } = block;
      if (note.kind === 'unknown') problems.push(`${block.at}: unknown note <!-- ${note.text} -->`);
      if (note.kind === 'not run' && note.reason.length < 10) problems.push(`${block.at}: "not run" needs its reason`);
      if (isJavaScript(block) && note.kind !== 'file' && note.kind !== 'not run') {
        problems.push(`${block.at}: a JavaScript example is saved as a file a later block runs (<!-- file: NAME -->), or marked not run`);
      }
    }
    for (const word of page.assumes) {
      if (!['server', 'postgres'].includes(word)) problems.push(`${page.path}: unknown docs-test word "${word}"`);
    }
  }
  assert.deepEqual(problems, []);
});

test('a command that serves in the foreground ends its block: typed in a terminal it keeps the terminal, so what follows it in the block would not run', () => {
  const problems: string[] = [];
  for (const page of pages) {
    for (const block of page.blocks.filter(isShell)) {
      // Commands, a line continued with \ joined to the next; comments and output are not commands.
      const commands = block.text
        .replace(/\\\n/g, ' ')
        .split('\n')
        .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
      commands.forEach((command, i) => {
        const serves = /(^|[\s;&(])(npm start|(npx )?plantstore serve)\b/.test(command) && !/&\s*(#.*)?$/.test(command);
        if (serves && i < commands.length - 1) problems.push(`${block.at}: "${command.trim()}" is followed by "${commands[i + 1]!.trim()}"`);
      });
    }
  }
  assert.deepEqual(problems, []);
});

test('the examples that run reach nothing but this machine', () => {
  const problems: string[] = [];
  for (const page of pages) {
    for (const block of page.blocks.filter(isShell)) {
      if (block.note.kind === 'not run') continue;
      const urls = [...block.text.matchAll(/\bhttps?:\/\/[^\s"'`)]+/g)].map((m) => m[0]);
      if (block.note.kind === 'background') urls.push(block.note.url);
      // Output shown under a command is not a request.
      const requested = urls.filter((url) => !block.text.split('\n').some((line) => line.startsWith('# ') && line.includes(url)));
      for (const url of requested) {
        if (!/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(url)) problems.push(`${block.at}: ${url}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('every relative link of the README, the changelog and docs/ leads to a file, and every anchor to a heading', () => {
  const problems: string[] = [];
  for (const page of pages) {
    for (const { target, line } of page.links) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? page.path : normalize(join(dirname(page.path), decodeURI(path)));
      const at = `${page.path}:${line}: ${target}`;
      if (!existsSync(join(ROOT, file))) {
        problems.push(`${at}: no file ${file}`);
        continue;
      }
      if (anchor === undefined) continue;
      const linked = byPath.get(file) ?? (file.endsWith('.md') ? readPage(file) : undefined);
      if (!linked) problems.push(`${at}: an anchor into a file that is not Markdown`);
      else if (!linked.anchors.has(anchor)) problems.push(`${at}: ${file} has no heading #${anchor}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('every test file the documentation names exists', () => {
  const missing = pages.flatMap((page) =>
    [...page.text.matchAll(/\btest\/[\w/.-]+\.test\.ts\b/g)].map((m) => m[0]).filter((path) => !existsSync(join(ROOT, path))).map((path) => `${page.path}: ${path}`),
  );
  assert.deepEqual(missing, []);
});

test('the docs index lists every page under docs/, and the README links the index', () => {
  const index = byPath.get('docs/index.md')!;
  const listed = new Set(index.links.map(({ target }) => target.split('#')[0]));
  const unlisted = pages.filter((p) => p.path.startsWith('docs/') && p.path !== 'docs/index.md').map((p) => p.path.slice('docs/'.length)).filter((name) => !listed.has(name));
  assert.deepEqual(unlisted, []);
  assert.ok(byPath.get('README.md')!.links.some(({ target }) => target === 'docs/index.md'));
});

/** Text files of the project: sources, tests, benchmarks, scripts and documentation. */
function projectFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) return [];
    if (statSync(join(ROOT, path)).isDirectory()) return projectFiles(path);
    return /\.(ts|mts|mjs|js|sql|md|sh)$/.test(name) ? [path] : [];
  });
}

test('no file of the project names a tracker issue by its number: users cannot see the tracker', () => {
  const files = ['README.md', 'CHANGELOG.md', ...['docs', 'src', 'test', 'bench', 'scripts', 'packages'].filter((d) => existsSync(join(ROOT, d))).flatMap(projectFiles)];
  const found = files.flatMap((file) =>
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => (/\bissues?\s+#?\d+/i.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(found, []);
});

test('the signature check the webhooks page writes without a library accepts what Standard Webhooks signs, and nothing else', async (t) => {
  const block = byPath.get('docs/webhooks.md')!.blocks.find((b) => b.note.kind === 'file' && b.note.name === 'verify.mjs');
  assert.ok(block, 'docs/webhooks.md saves verify.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-docs-verify-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'verify.mjs'), block.text);
  const { verified } = (await import(pathToFileURL(join(dir, 'verify.mjs')).href)) as {
    verified: (secret: string, headers: Record<string, string>, body: string) => boolean;
  };

  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const other = `whsec_${randomBytes(32).toString('base64')}`;
  const body = '{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}';
  const headers = (key: string, at = new Date(), payload = body, id = 'msg_01') => ({
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(id, at, payload),
  });
  assert.equal(verified(secret, headers(secret), body), true, 'signed with the secret');
  assert.equal(verified(secret, headers(other), body), false, 'signed with another secret');
  assert.equal(verified(secret, headers(secret), body.replace('Monstera', 'Monsterb')), false, 'another body');
  assert.equal(verified(secret, { ...headers(secret), 'webhook-id': 'msg_02' }, body), false, 'another event id');
  assert.equal(verified(secret, headers(secret, new Date(Date.now() - 10 * 60_000)), body), false, 'ten minutes old');
  const rotating = { ...headers(secret), 'webhook-signature': `${headers(other)['webhook-signature']} ${headers(secret)['webhook-signature']}` };
  assert.equal(verified(secret, rotating, body), true, 'one of several signatures, as when secrets rotate');
  const { 'webhook-signature': _, ...unsigned } = headers(secret);
  assert.equal(verified(secret, unsigned, body), false, 'no signature');
});
