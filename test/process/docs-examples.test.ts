import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { DocSession, freePort } from '../helpers/doc-session.js';
import { ROOT } from '../helpers/checkout.js';
import { documentationFiles, findShown, isExample, isShell, matchesShown, readPage, stepsOf, type Page } from '../helpers/markdown.js';

/**
 * Every example of the README and docs/ that can run here runs here, as a reader would type it: each
 * page's shell blocks in one shell, in order, in a fresh folder, against a real server (the built CLI,
 * which npm test builds first), and each output the page shows is compared with what was printed
 * (test/helpers/markdown.ts says how a page marks its blocks). Pages that assume PostgreSQL run in the
 * PostgreSQL run of the suite, the others in the SQLite run. Nothing leaves the machine: every address
 * is loopback, and npm and npx stand in for the registry (test/helpers/doc-session.ts).
 */

const POSTGRES_URL = process.env.PLANTSTORE_TEST_DATABASE_URL || null;
const CURL_MISSING = !['/usr/bin/curl', '/bin/curl', '/usr/local/bin/curl'].some(existsSync);
const skip = CURL_MISSING && process.env.CI !== 'true' ? 'curl is missing: apt-get install curl (CI fails without it)' : false;
if (skip) console.warn(`SKIPPED the docs examples: ${skip}`);

const pages = documentationFiles()
  .map(readPage)
  .filter((page) => page.blocks.some((b) => isExample(b) && b.note.kind !== 'not run'))
  .filter((page) => page.assumes.includes('postgres') === (POSTGRES_URL !== null));

/** A database of its own for a PostgreSQL page, dropped afterwards: the page's pg_dump sees only it. */
async function database(t: TestContext): Promise<string> {
  const name = `plantstore_docs_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL! });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  t.after(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });
  const url = new URL(POSTGRES_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The reader's folder and shell: the variables the pages read (ports, the checkout) set as a reader would. */
async function session(t: TestContext, pages: readonly Page[]): Promise<DocSession> {
  const base = mkdtempSync(join(tmpdir(), 'plantstore-docs-'));
  const dir = join(base, 'reader');
  mkdirSync(dir);
  const env: Record<string, string> = { HOME: dir, LANG: 'C.UTF-8', TMPDIR: tmpdir(), PORT: String(await freePort()) };
  const text = pages.map((page) => page.text).join('\n');
  // Set only where a page reads them: METRICS_PORT, for one, turns the server's metrics on.
  for (const name of ['RECEIVER_PORT', 'METRICS_PORT']) {
    if (text.includes(`$${name}`) || text.includes(`\${${name}`)) env[name] = String(await freePort());
  }
  if (text.includes('PLANTSTORE_CHECKOUT')) env.PLANTSTORE_CHECKOUT = ROOT;
  if (pages.some((page) => page.assumes.includes('postgres'))) env.DATABASE_URL = await database(t);
  const shell = new DocSession(dir, env);
  t.after(async () => {
    await shell.stop();
    rmSync(base, { recursive: true, force: true });
  });
  return shell;
}

/** Types `page`'s examples into `shell`, in order, checking each output the page shows. */
async function runPage(shell: DocSession, page: Page): Promise<void> {
  const failed = (at: string, what: string) => new Error(`${at}: ${what}\n${shell.diagnostics()}`);
  if (page.assumes.includes('server')) {
    // What the page assumes is running: a server as the Quick start starts it, in the reader's folder.
    await shell.background('npm start', 'http://127.0.0.1:$PORT/readyz').catch((e: Error) => {
      throw failed(page.path, e.message);
    });
  }
  /** How far each stream's output has been matched: the next output shown is looked for after it. */
  const streams = new Map<string, number>();
  for (const block of page.blocks) {
    if (block.note.kind === 'output') {
      const { name } = block.note;
      const expected = { lines: block.text.split('\n') };
      const end = await shell.streamed(name, (printed) => findShown(expected, printed, streams.get(name))).catch((e: Error) => {
        throw failed(block.at, e.message);
      });
      streams.set(name, end);
      continue;
    }
    if (!isExample(block) || block.note.kind === 'not run') continue;
    if (block.note.kind === 'file') {
      shell.save(block.note.name, block.text);
      continue;
    }
    assert.ok(isShell(block), `${block.at}: a JavaScript block is saved as a file (<!-- file: NAME -->) or marked not run`);
    if (block.note.kind === 'stream') {
      // One command, the output it shows under it: started as in another terminal, then waited for.
      const [step, ...more] = stepsOf(block);
      assert.ok(step?.expected && more.length === 0, `${block.at}: a stream block is one command and the output it shows`);
      const { name } = block.note;
      await shell.stream(step.commands, name);
      const end = await shell.streamed(name, (printed) => findShown(step.expected!, printed)).catch((e: Error) => {
        throw failed(block.at, e.message);
      });
      streams.set(name, end);
      continue;
    }
    if (block.note.kind === 'background') {
      await shell.background(block.text, block.note.url).catch((e: Error) => {
        throw failed(block.at, e.message);
      });
      continue;
    }
    for (const step of stepsOf(block)) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const { stdout } = await shell.run(block.note.kind === 'retry' ? `{\n${step.commands}\n} || true` : step.commands).catch((e: Error) => {
          throw failed(block.at, e.message);
        });
        if (!step.expected || matchesShown(step.expected, stdout)) break;
        if (block.note.kind !== 'retry' || Date.now() > deadline) {
          throw failed(block.at, `printed:\n${stdout.trim()}\nwhere the page shows:\n${step.expected.lines.join('\n')}\nafter:\n${step.commands}`);
        }
        // What the block reads happens in the background; the reader runs it again a moment later.
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }
}

/**
 * The pages a newcomer reads first, in this order and in one folder (one store, the same user alice):
 * each must work after the ones before it, not only on a fresh store. Between two pages the reader
 * stops what runs in the other terminals (Ctrl-C), as the next page starts its own server.
 */
const FIRST_PAGES = ['README.md', 'docs/tutorial.md', 'docs/webhooks.md'];
const first = FIRST_PAGES.flatMap((path) => pages.filter((page) => page.path === path));

for (const page of pages.filter((p) => !first.includes(p))) {
  test(`the examples of ${page.path} run as written, and print what the page shows`, { skip, timeout: 600_000 }, async (t) => {
    assert.ok(!CURL_MISSING, 'CI=true: the docs examples need curl');
    await runPage(await session(t, [page]), page);
  });
}

if (first.length > 0) {
  test(`the examples of ${FIRST_PAGES.join(', then ')} run as written one after the other in one folder, and print what the pages show`, { skip, timeout: 600_000 }, async (t) => {
    assert.ok(!CURL_MISSING, 'CI=true: the docs examples need curl');
    assert.deepEqual(first.map((page) => page.path), FIRST_PAGES, 'the first pages have examples that run, in the SQLite run');
    const shell = await session(t, first);
    for (const page of first) {
      await shell.interrupt();
      await runPage(shell, page);
    }
  });
}
