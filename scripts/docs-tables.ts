// The Markdown tables the user documentation carries, generated from the code's own tables:
// test/contract/docs.test.ts fails when the documentation's copy is not what this makes. Run it
// (node --import tsx scripts/docs-tables.ts) to print both, to paste after changing a table.
import { pathToFileURL } from 'node:url';
import { allowedValues, OPTIONS, type OptionInfo } from '../src/config/options.js';
import { errorTableMarkdown } from '../src/http/openapi.js';

// The error table is built where the OpenAPI document needs it at run time (its description carries
// the same table), so that the served document and the documentation cannot differ.
export { errorTableMarkdown };

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

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`${errorTableMarkdown()}\n\n${configTableMarkdown()}`);
}
