// npm run docs:tables: writes the tables the documentation generates from the code's own tables (the
// configuration table from config/options.ts, the error table from http/errors.ts, the metrics table from
// metrics/families.ts) into the pages that hold
// them, between their markers (`<!-- generated: NAME … -->` and `<!-- end of the generated table -->`).
// test/contract/docs.test.ts fails when a page's table is not what this would write.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { allowedValues, OPTIONS, type OptionInfo } from '../src/config/options.js';
import { errorTableMarkdown } from '../src/http/schemas.js';
import { METRIC_FAMILIES } from '../src/metrics/families.js';

/** The configuration table: every option's variable, `serve` flag, default and meaning. */
export function configTableMarkdown(): string {
  const rows = OPTIONS.map((o: OptionInfo) => {
    const allowed = allowedValues(o);
    const meaning = allowed === undefined ? o.help : `${o.help}. ${allowed[0]?.toUpperCase()}${allowed.slice(1)}.`;
    // An empty code span (``) renders as two backticks.
    const def = o.default === '' ? '(empty)' : `\`${o.default}\``;
    return `| \`${o.env}\` | \`--${o.flag}\` | ${def} | ${meaning} |`;
  });
  return ['| Variable | `serve` flag | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * Names read together in one row: the first in full, the others by what follows their common stem
 * (`plantstore_list_cache_hits_total`, `_misses_total`); names with no common stem, each in full.
 */
function familyNames(names: readonly string[]): string {
  const [first = '', ...others] = names;
  let common = 0;
  while (others.length > 0 && others.every((n) => n[common] === first[common]) && common < first.length) common += 1;
  const stem = first.lastIndexOf('_', common - 1);
  return [first, ...others.map((n) => (stem > 0 ? n.slice(stem) : n))].map((n) => `\`${n}\``).join(', ');
}

/** The metrics table: every family's name, type, labels and what it is for. */
export function metricsTableMarkdown(): string {
  const rows = METRIC_FAMILIES.map((f) => {
    const labels = f.labels === 'same' ? 'the same' : f.labels.map((l) => `\`${l}\``).join(', ');
    // An empty cell is written `| |`, as the page had it.
    const cells = [familyNames(f.names), f.type, labels, f.meaning].map((c) => (c === '' ? ' ' : ` ${c} `));
    return `|${cells.join('|')}|`;
  });
  return ['| Metric | Type | Labels | What it is for |', '|---|---|---|---|', ...rows].join('\n');
}

export interface GeneratedTable {
  /** The page, from the repository's root. */
  readonly page: string;
  /** The words after `generated:` in the page's opening marker. */
  readonly name: string;
  readonly markdown: () => string;
}

export const TABLES: readonly GeneratedTable[] = [
  { page: 'docs/configuration.md', name: 'the configuration table', markdown: configTableMarkdown },
  { page: 'docs/api.md', name: 'the error table', markdown: errorTableMarkdown },
  { page: 'docs/logs-and-metrics.md', name: 'the metrics table', markdown: metricsTableMarkdown },
];

const END = '<!-- end of the generated table -->';

/** `text` with the table between `table`'s markers written anew; throws when the page has no such markers. */
export function withTable(text: string, table: GeneratedTable): string {
  const open = text.indexOf(`<!-- generated: ${table.name}`);
  const start = open < 0 ? -1 : text.indexOf('\n', open) + 1;
  const end = start <= 0 ? -1 : text.indexOf(END, start);
  if (end < 0) throw new Error(`${table.page} has no "<!-- generated: ${table.name} … -->" … "${END}" markers`);
  return `${text.slice(0, start)}${table.markdown()}\n${text.slice(end)}`;
}

export const pagePath = (page: string): string => fileURLToPath(new URL(`../${page}`, import.meta.url));

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const table of TABLES) {
    const text = readFileSync(pagePath(table.page), 'utf8');
    const written = withTable(text, table);
    if (written !== text) writeFileSync(pagePath(table.page), written);
    console.log(`${table.page}: ${table.name} ${written === text ? 'was current' : 'written'}`);
  }
}
