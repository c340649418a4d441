import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/checkout.js';

// The shape of the code (docs/development.md, "Who may import whom"), checked from the import lines
// themselves: a rule that only a page states is broken by the first change that does not read it.
const GENERATED = new Set(['packages/client/src/generated/openapi.ts']);

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(join(ROOT, path)).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every relative import of `file` (static, type-only and dynamic alike), as repository paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)['"](\.[^'"]+)['"]/gm)].map((m) => m[1]!);
  return found.map((spec) => {
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
    return target.replace(/\.js$/, '.ts');
  });
}

const SRC = [...sources('src'), ...(safeSources('packages'))];
function safeSources(dir: string): string[] {
  try {
    return sources(dir);
  } catch {
    return [];
  }
}
const GRAPH = new Map(SRC.map((file) => [file, importsOf(file).filter((target) => target !== file)]));

function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

test('no import cycle between files, type-only imports included', () => {
  assert.deepEqual(cycles(GRAPH).map((c) => c.join(' -> ')), []);
});

test('no import cycle between the folders of src/', () => {
  const folder = (file: string): string => dirname(file);
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of GRAPH) {
    for (const target of targets) {
      const [from, to] = [folder(file), folder(target)];
      // A folder may use its own subfolders (http/ registers http/routes/): only sideways and upward
      // imports between different folders can close a circle the reader cannot follow.
      if (from === to || to.startsWith(`${from}/`) || from.startsWith(`${to}/`)) continue;
      if (!folders.has(from)) folders.set(from, new Set());
      folders.get(from)!.add(to);
    }
  }
  const graph = new Map([...folders].map(([k, v]) => [k, [...v]]));
  assert.deepEqual(cycles(graph).map((c) => c.join(' -> ')), []);
});

/** Imports of files under `from` that reach a file under one of `to`, as "file -> target". */
function crossing(from: string, to: readonly string[], except: readonly string[] = []): string[] {
  const under = (file: string, dir: string): boolean => file === dir || file.startsWith(`${dir}/`);
  return [...GRAPH].flatMap(([file, targets]) =>
    under(file, from) && !except.some((e) => under(file, e))
      ? targets.filter((t) => to.some((dir) => under(t, dir))).map((t) => `${file} -> ${t}`)
      : [],
  );
}

test('domain/ imports nothing of ours but domain/', () => {
  const ours = ['src'].flatMap((d) => [...GRAPH.keys()].filter((f) => f.startsWith(`${d}/`) && !f.startsWith('src/domain/')));
  assert.deepEqual(crossing('src/domain', ours), []);
});

test('store/ imports only domain/ and itself; a backend never imports the other', () => {
  const outside = [...new Set([...GRAPH.keys()].map((f) => dirname(f)))]
    .filter((d) => d.startsWith('src') && d !== 'src' && !d.startsWith('src/store') && !d.startsWith('src/domain'));
  assert.deepEqual(crossing('src/store', [...outside, 'src/app.ts', 'src/server.ts', 'src/logger.ts', 'src/version.ts']), []);
  assert.deepEqual(crossing('src/store/sqlite', ['src/store/postgres']), []);
  assert.deepEqual(crossing('src/store/postgres', ['src/store/sqlite']), []);
});

test('http/ never imports a backend, a store wrapper or open.ts; webhooks/ never imports http/', () => {
  assert.deepEqual(
    crossing('src/http', ['src/store/sqlite', 'src/store/postgres', 'src/store/wrappers', 'src/store/open.ts', 'src/server.ts', 'src/cli']),
    [],
  );
  assert.deepEqual(crossing('src/webhooks', ['src/http', 'src/server.ts', 'src/cli', 'src/store/sqlite', 'src/store/postgres']), []);
});

test('cli/ reaches a store through open.ts and the store-level modules, never a backend\'s files (but the driver\'s report) or a wrapper', () => {
  // open.ts opens and chooses the backend, inspect.ts reads one for doctor, files.ts holds what is done
  // to a SQLite store's files (backup, the check that an output is none of them). driver.ts only says
  // which better-sqlite3 this process runs, which doctor reports as server.ts logs it.
  assert.deepEqual(crossing('src/cli', ['src/store/sqlite', 'src/store/postgres', 'src/store/wrappers']).filter((i) => !i.endsWith(' -> src/store/sqlite/driver.ts')), []);
});

test('transfer/ imports only domain/, the transfer interface, the temporary files, webhook registration\'s checks and itself', () => {
  // A TransferableStore is opened for it (open.ts, by cli/): the export file never depends on a backend.
  const allowed = ['src/transfer', 'src/domain', 'src/store/transfer.ts', 'src/store/temporary-files.ts', 'src/webhooks/register.ts'];
  const others = [...GRAPH].flatMap(([file, targets]) =>
    file.startsWith('src/transfer/') ? targets.filter((t) => !allowed.some((a) => t === a || t.startsWith(`${a}/`))).map((t) => `${file} -> ${t}`) : [],
  );
  assert.deepEqual(others, []);
});

test('packages/client imports only itself: no server code, no dependency, no Node.js module or global', () => {
  const files = SRC.filter((f) => f.startsWith('packages/client/src/'));
  assert.ok(files.includes('packages/client/src/index.ts'), 'the client package is where the layout says');
  const problems = files.flatMap((file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    // Every specifier, relative or bare, of static, type-only, re-exporting and dynamic imports alike.
    const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
    const outside = specifiers
      .filter((spec) => !spec.startsWith('.') || !relative(ROOT, resolve(ROOT, dirname(file), spec)).startsWith('packages/client/src/'))
      .map((spec) => `${file} imports ${spec}`);
    const globals = /\bprocess\.|\bBuffer\b|\brequire\(|\b__dirname\b/.test(text) ? [`${file} uses a Node.js global`] : [];
    return [...outside, ...globals];
  });
  assert.deepEqual(problems, []);
});

test('routes never import each other: what they share is in http/schemas.ts', () => {
  const routes = readdirSync(join(ROOT, 'src/http/routes')).filter((n) => statSync(join(ROOT, 'src/http/routes', n)).isDirectory());
  for (const route of routes) {
    const others = routes.filter((r) => r !== route).map((r) => `src/http/routes/${r}`);
    assert.deepEqual(crossing(`src/http/routes/${route}`, others), [], route);
  }
});

test('the error table imports nothing of ours, and the shared schemas no route (each route adds its own)', () => {
  assert.deepEqual(GRAPH.get('src/http/errors.ts'), []);
  assert.deepEqual(GRAPH.get('src/http/schemas.ts')?.filter((target) => target.startsWith('src/http/routes/')), []);
});

/** As `wc -l` counts them: a last line ended by a newline is not followed by another. */
const lineCount = (text: string): number => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

test('no source file is over 500 lines but generated ones', () => {
  const files = [...SRC, ...sources('bench'), ...sources('scripts'), ...sources('test')].filter((f) => !GENERATED.has(f));
  const long = files
    .map((f) => [f, lineCount(readFileSync(join(ROOT, f), 'utf8'))] as const)
    .filter(([, lines]) => lines > 500)
    .map(([f, lines]) => `${f}: ${lines}`);
  assert.deepEqual(long, []);
});
