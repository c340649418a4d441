import { visibleText } from '../domain/principal.js';
import type { Cli } from './io.js';

/**
 * A table cell: control characters (a description may hold a line break), invisible format characters
 * and bidirectional controls are shown escaped (\uXXXX), so that one row stays one line and a name
 * stored before user names refused them shows what it holds rather than its characters reordered.
 */
export const cell = visibleText;

/** Rows of cells as aligned columns, the first row the header, as the list commands print them. */
export function printTable(cli: Cli, rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length))) ?? [];
  for (const r of rows) cli.print(r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
}
