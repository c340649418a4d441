import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../../domain/principal.js';

/**
 * Why a bearer string was refused, for the debug log (never the token, nor anything that identifies it
 * as well as the token does). `tokenId` names a known token as `token list` shows it. `description`,
 * when set, is told to the client (the challenge's error_description and the message): a JWT's refusal
 * says which check failed, which helps whoever configures the identity provider and tells an attacker
 * nothing the token does not already show. Printable ASCII without quotes or backslashes (RFC 6750 §3).
 */
export class Refusal {
  constructor(
    readonly reason: string,
    readonly tokenId?: number,
    readonly description?: string,
  ) {}
}

/** A verifier's answer: who is calling, or why not. */
export type Verdict = Principal | Refusal;

/**
 * Turns a bearer string into a principal or a refusal. One implementation per kind of credential:
 * opaque `pst_…` tokens (opaque.ts) first; a JWT/OIDC verifier (jwt.ts) is one more file beside it,
 * listed in `verifiers()` in hooks.ts with its configuration.
 *
 * `verify` may answer synchronously: the hook takes a non-promise answer at once, so a verifier that
 * knows the answer without I/O (a cached opaque token, a JWT checked against cached keys) costs no
 * promise per request. Asynchronous answers must be native promises (what an async function returns).
 * A store failure is a rejection (answered 503/500 by the error handler), not a refusal.
 */
export interface Verifier {
  /**
   * Whether this bearer string has this verifier's shape (a JWT: three dot-separated parts). The first
   * verifier that accepts it decides; the opaque verifier, last, accepts anything.
   */
  accepts(token: string): boolean;
  /**
   * Called only with a string the bearer pattern captured (a b64token, RFC 6750 §2.1): `authenticate`
   * is its one caller. So whatever a verifier remembers from it is such a string, which `known` relies on.
   */
  verify(token: string, now: number): Verdict | Promise<Verdict>;
  /**
   * The principal of a token this verifier accepted before and still trusts, at once: one lookup in what
   * it remembers, no pattern, no refusal (undefined for anything else, which then takes `accepts` and
   * `verify`). What it finds can only be a string `verify` was given, hence a b64token. A verifier that
   * remembers nothing leaves it out.
   */
  known?(token: string, now: number): Principal | undefined;
  /** Stops background work (a JWT verifier's key refresh) when the app closes. */
  close?(): void;
}

export type Done = (error?: Error) => void;
/**
 * Authentication steps are callback-style onRequest hooks: an async hook would cost a promise per
 * request even when the answer is known synchronously (a cached token).
 */
export type Hook = (request: FastifyRequest, reply: FastifyReply, done: Done) => void;
