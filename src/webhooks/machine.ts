/**
 * A transition its table does not allow: the dispatcher's own bug (a part driven out of order), never
 * anything a user or a receiver did. Thrown where it happens, so that it is not mistaken for a store error.
 */
export class TransitionError extends Error {
  readonly code = 'WEBHOOK_INTERNAL_STATE';
}

/** Which states each state may move to. */
export type Moves<S extends string> = Readonly<Record<S, readonly S[]>>;

/**
 * The named state of one part of the dispatcher (claims.ts, attempts.ts, recorder.ts) and its checked
 * transitions, as graphile-worker's local queue keeps its mode: a part's state is one value that every
 * change goes through, instead of flags and timers whose combinations nobody listed.
 */
export class Machine<S extends string> {
  readonly #name: string;
  readonly #moves: Moves<S>;
  #state: S;

  constructor(name: string, initial: S, moves: Moves<S>) {
    this.#name = name;
    this.#state = initial;
    this.#moves = moves;
  }

  get state(): S {
    return this.#state;
  }

  /** Moves to `next`, or throws TransitionError when the table does not allow it from here. */
  to(next: S): void {
    if (!this.#moves[this.#state].includes(next)) {
      throw new TransitionError(`webhook ${this.#name}: no transition from ${this.#state} to ${next}`);
    }
    this.#state = next;
  }
}
