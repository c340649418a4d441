import type Database from './driver.js';
import { render, SQLITE, type Sql } from '../sql/dialect.js';

/** A value by name, as a shared statement names them (sql/dialect.ts). */
export type Values = Readonly<Record<string, unknown>>;

/**
 * A statement written with the tag both dialects share (sql/dialect.ts), rendered and prepared once,
 * run with its values by name: SQLite's `?` of each use, in order.
 */
export class Prepared<Row = unknown> {
  readonly #statement: Database.Statement<unknown[], Row>;
  readonly #values: (args: Values) => unknown[];

  constructor(db: Database.Database, statement: Sql) {
    const rendered = render(SQLITE, statement);
    this.#statement = db.prepare<unknown[], Row>(rendered.text);
    this.#values = rendered.values;
  }

  get(args: Values): Row | undefined {
    return this.#statement.get(this.#values(args));
  }

  all(args: Values): Row[] {
    return this.#statement.all(this.#values(args));
  }

  run(args: Values): Database.RunResult {
    return this.#statement.run(this.#values(args));
  }
}
