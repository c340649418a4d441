import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ATTEMPTS_MOVES } from '../../src/webhooks/attempts.js';
import { CLAIM_MOVES } from '../../src/webhooks/claims.js';
import { Machine, TransitionError, type Moves } from '../../src/webhooks/machine.js';
import { RECORD_MOVES, WRITE_MOVES } from '../../src/webhooks/recorder.js';

// The dispatcher's parts (claims, attempts, recorder) each keep one named state and move it only through
// their table; the parts themselves, driven against a real store, are in test/store/webhooks-states.test.ts.

/** Every pair of states: the ones the table lists are taken, every other one throws and changes nothing. */
function checkEveryPair<S extends string>(name: string, moves: Moves<S>): void {
  const states = Object.keys(moves) as S[];
  for (const from of states) {
    for (const next of states) {
      const machine = new Machine<S>(name, from, moves);
      if (moves[from].includes(next)) {
        machine.to(next);
        assert.equal(machine.state, next, `${name}: ${from} -> ${next}`);
      } else {
        assert.throws(() => machine.to(next), (err: unknown) => {
          assert.ok(err instanceof TransitionError, `${name}: ${from} -> ${next} throws a TransitionError`);
          assert.equal(err.code, 'WEBHOOK_INTERNAL_STATE');
          assert.match(err.message, new RegExp(`${name}: no transition from ${from} to ${next}$`));
          return true;
        });
        assert.equal(machine.state, from, `${name}: a refused ${from} -> ${next} leaves the state as it was`);
      }
    }
  }
}

test('claiming moves idle -> spacing | claiming, claiming -> claimingAgain, back to idle, and to stopped from anywhere; nothing else', () => {
  assert.deepEqual(CLAIM_MOVES, {
    idle: ['spacing', 'claiming', 'stopped'],
    spacing: ['idle', 'stopped'],
    claiming: ['claimingAgain', 'idle', 'stopped'],
    claimingAgain: ['idle', 'stopped'],
    stopped: [],
  });
  checkEveryPair('claims', CLAIM_MOVES);
});

test('attempts go running -> draining -> (aborting ->) drained -> released -> closed, in that order only', () => {
  assert.deepEqual(ATTEMPTS_MOVES, {
    running: ['draining'],
    draining: ['aborting', 'drained'],
    aborting: ['drained'],
    drained: ['released'],
    released: ['closed'],
    closed: [],
  });
  checkEveryPair('attempts', ATTEMPTS_MOVES);
});

test('recording is planned idle -> delayed -> immediate, back to idle when it starts, and closed once', () => {
  assert.deepEqual(RECORD_MOVES, {
    idle: ['delayed', 'immediate', 'closed'],
    delayed: ['idle', 'immediate', 'closed'],
    immediate: ['idle', 'closed'],
    closed: [],
  });
  checkEveryPair('recorder', RECORD_MOVES);
});

test('one recording at a time: ready -> writing -> ready', () => {
  assert.deepEqual(WRITE_MOVES, { ready: ['writing'], writing: ['ready'] });
  checkEveryPair('recording', WRITE_MOVES);
});
