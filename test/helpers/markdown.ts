import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './checkout.js';

/**
 * The user documentation as the docs tests read it: README.md, CHANGELOG.md, docs/*.md and the client
 * package's README.md and CHANGELOG.md, their code blocks with the note written just before each, their
 * headings (as GitHub anchors them) and links.
 *
 * A shell or JavaScript block is an example, and each example either runs in test/process/docs-examples
 * or says why not. The note is an HTML comment on the line before the block (readers do not see it):
 *   (none)                      a shell block: typed into the page's shell, in order
 *   <!-- not run: REASON -->    not run, and why (it needs a real identity provider, it takes minutes…)
 *   <!-- file: NAME -->         saved as NAME in the reader's folder, as the page asks (a JavaScript file)
 *   <!-- background: URL -->    a shell block that keeps running (a server, in "another terminal"); the
 *                               next blocks wait until URL answers
 *   <!-- retry -->              a shell block run again until its output is the one shown (a read of
 *                               something that happens in the background, as a reader would repeat it)
 *   <!-- stream: NAME -->       a shell block whose command keeps printing (curl -N of the feed), as in
 *                               another terminal; the next blocks wait until it has printed the output
 *                               it shows
 *   <!-- output: NAME -->       on a text block: what the stream NAME prints next, after the blocks
 *                               between (a create it reports); waited for in its output
 * A page-level note anywhere in the page says what the page assumes is running, which the test starts:
 *   <!-- docs-test: server -->            a server as the Quick start starts it, PORT set
 *   <!-- docs-test: postgres server -->   the same, and the page runs on PostgreSQL (DATABASE_URL set)
 * A shell block shows what a command prints as comments under it: `# → ` starts a line of output,
 * `#   ` continues the line above it (a long line wrapped); in the output shown, `…` stands for any text
 * and a number for any number (ids, times and sizes differ from run to run).
 */

/**
 * README.md, CHANGELOG.md, every page under docs/ and the client package's README and changelog (they
 * go into its tarball), as paths from the repository's root.
 */
export function documentationFiles(): string[] {
  const pages = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`);
  return ['README.md', 'CHANGELOG.md', ...pages, 'packages/client/README.md', 'packages/client/CHANGELOG.md'];
}

export type Note =
  | { readonly kind: 'run' }
  | { readonly kind: 'not run'; readonly reason: string }
  | { readonly kind: 'file'; readonly name: string }
  | { readonly kind: 'background'; readonly url: string }
  | { readonly kind: 'retry' }
  | { readonly kind: 'stream'; readonly name: string }
  | { readonly kind: 'output'; readonly name: string }
  | { readonly kind: 'unknown'; readonly text: string };

export interface Block {
  /** Where it is, for messages: `docs/webhooks.md:120`. */
  readonly at: string;
  readonly lang: string;
  readonly text: string;
  readonly note: Note;
}

export interface Page {
  readonly path: string;
  readonly text: string;
  readonly blocks: readonly Block[];
  /** The page-level `docs-test:` words (`server`, `postgres`), empty when it has none. */
  readonly assumes: readonly string[];
  /** GitHub's anchors of the page's headings. */
  readonly anchors: ReadonlySet<string>;
  /** The page's Markdown links and images outside code, with the line each is on. */
  readonly links: ReadonlyArray<{ readonly target: string; readonly line: number }>;
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console']);
const JAVASCRIPT = new Set(['js', 'javascript', 'mjs', 'ts', 'typescript']);
export const isShell = (block: Block): boolean => SHELL.has(block.lang);
export const isJavaScript = (block: Block): boolean => JAVASCRIPT.has(block.lang);
export const isExample = (block: Block): boolean => isShell(block) || isJavaScript(block);

function noteOf(line: string | undefined): Note {
  const m = /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(line ?? '');
  if (!m) return { kind: 'run' };
  const text = m[1]!;
  let n: RegExpExecArray | null;
  if ((n = /^not run:\s*(.*)$/s.exec(text))) return { kind: 'not run', reason: n[1]!.trim() };
  if ((n = /^file:\s*(\S+)$/.exec(text))) return { kind: 'file', name: n[1]! };
  if ((n = /^background:\s*(\S+)$/.exec(text))) return { kind: 'background', url: n[1]! };
  if (text === 'retry') return { kind: 'retry' };
  if ((n = /^(stream|output):\s*(\S+)$/.exec(text))) return { kind: n[1] as 'stream' | 'output', name: n[2]! };
  // Another comment (not a note for the tests) before a block leaves it an ordinary example.
  if (!/^(not run|file|background|retry|stream|output|docs-test)\b/.test(text)) return { kind: 'run' };
  return { kind: 'unknown', text };
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function slug(heading: string, seen: Map<string, number>): string {
  const base = heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
  const count = seen.get(base) ?? 0;
  seen.set(base, count + 1);
  return count === 0 ? base : `${base}-${count}`;
}

export function readPage(path: string): Page {
  const text = readFileSync(join(ROOT, path), 'utf8');
  const lines = text.split('\n');
  const blocks: Block[] = [];
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const links: Array<{ target: string; line: number }> = [];
  let assumes: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$/.exec(line);
    if (fence) {
      const [, indent = '', marker = '', lang = ''] = fence;
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !(lines[i]!.trim() === marker && lines[i]!.startsWith(indent)); i++) {
        body.push(lines[i]!.startsWith(indent) ? lines[i]!.slice(indent.length) : lines[i]!.trimStart());
      }
      let before = start - 1;
      while (before >= 0 && lines[before]!.trim() === '') before--;
      blocks.push({ at: `${path}:${start + 1}`, lang: lang.toLowerCase(), text: body.join('\n'), note: noteOf(lines[before]) });
      continue;
    }
    const page = /^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$/.exec(line);
    if (page) assumes = page[1]!.split(/\s+/);
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) anchors.add(slug(heading[2]!, seen));
    // Links outside inline code: `[text](target)`, images too.
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push({ target: m[1]!, line: i + 1 });
  }
  return { path, text, blocks, assumes, anchors, links };
}

export interface Expected {
  /** The output lines shown, each joined from its `# → ` line and the `#   ` lines that continue it. */
  readonly lines: readonly string[];
}

export interface Step {
  /** The commands to type, comments included. */
  readonly commands: string;
  /** What the commands print, when the page shows it. */
  readonly expected?: Expected;
}

/**
 * A shell block as steps: the commands up to each output the page shows, then that output; commands
 * after the last output shown are a step of their own.
 */
export function stepsOf(block: Block): Step[] {
  const steps: Step[] = [];
  let commands: string[] = [];
  let output: string[] | null = null;
  const close = () => {
    if (!output) return;
    steps.push({ commands: commands.join('\n'), expected: { lines: output } });
    commands = [];
    output = null;
  };
  for (const line of block.text.split('\n')) {
    const shown = /^# → ?(.*)$/.exec(line);
    const continued = /^# {3}(.*)$/.exec(line);
    if (shown) (output ??= []).push(shown[1]!);
    else if (continued && output) output[output.length - 1] += continued[1]!;
    else {
      if (output) close();
      commands.push(line);
    }
  }
  close();
  if (commands.some((c) => c.trim() !== '')) steps.push({ commands: commands.join('\n') });
  return steps;
}

/**
 * Whether `actual` has the shape of the output shown: the same text where `…` stands for any text and
 * every number for any number. Line ends are compared without carriage returns, and blank lines at
 * either end do not count.
 */
export function matchesShown(expected: Expected, actual: string): boolean {
  return new RegExp(`^${shownPattern(expected)}$`).test(actual.replace(/\r/g, '').replace(/^\n+|\n+$/g, ''));
}

function shownPattern(expected: Expected): string {
  return expected.lines
    .join('\n')
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\d+/g, '\\d+'))
    .join('[\\s\\S]*?');
}

/**
 * Where the output shown first appears, whole lines, in what a stream printed from `from` on (carriage
 * returns dropped, as matchesShown does): the offset just past it, or undefined while it has not. A
 * stream prints other lines between (a feed's heartbeats), so the output shown is looked for, not
 * matched against all of it.
 */
export function findShown(expected: Expected, printed: string, from = 0): number | undefined {
  const text = printed.replace(/\r/g, '');
  const found = new RegExp(`(?:^|\n)${shownPattern(expected)}(?=\n|$)`, 'g');
  found.lastIndex = from;
  const match = found.exec(text);
  return match === null ? undefined : match.index + match[0].length;
}
