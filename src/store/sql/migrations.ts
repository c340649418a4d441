import type { DialectName } from './dialect.js';
import { readdirSync, readFileSync } from 'node:fs';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const FILE = /^(\d{3})_([a-z0-9_]+)\.sql$/;

/** The versioned migrations of one backend, `migrations/<backend>/NNN_name.sql`, in order. */
export function loadMigrations(backend: DialectName): Migration[] {
  const dir = new URL(`../migrations/${backend}/`, import.meta.url);
  return readdirSync(dir)
    .flatMap((file) => {
      const m = FILE.exec(file);
      if (!m) return [];
      return [{ version: Number(m[1]), name: m[2] ?? '', sql: readFileSync(new URL(file, dir), 'utf8') }];
    })
    .sort((a, b) => a.version - b.version);
}

/** A migration as its file names it, "006_list_indexes_covering": what `plantstore migrate` reports. */
export function migrationName(m: Migration): string {
  return `${String(m.version).padStart(3, '0')}_${m.name}`;
}

/** Told which migrations an open applied (none: the store was up to date). */
export type MigrationsApplied = (names: readonly string[]) => void;
