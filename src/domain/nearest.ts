// What a mistyped name meant: the CLI's options (`--prot`) and the settings file's keys (`DATABSE_URL`).

/** Edits (insertions, deletions, substitutions, swaps of neighbours) from `a` to `b`. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const above = d[i - 1] as number[];
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/** The name meant by a mistyped one: the nearest by a few edits, or the one it begins (`--us` for `--user`). */
export function nearestName(name: string, names: readonly string[]): string | undefined {
  const ranked = names
    .map((candidate) => ({ candidate, edits: candidate.startsWith(name) && name.length >= 4 ? 0 : distance(name, candidate) }))
    .filter(({ candidate, edits }) => edits <= Math.max(1, Math.floor(Math.min(candidate.length, name.length) / 3)))
    .sort((x, y) => x.edits - y.edits);
  return ranked[0]?.candidate;
}
