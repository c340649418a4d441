import { newToken, tokenCreateFailure, type TokenRecord, type TokenRequest } from '../../src/domain/token.js';
import type { Store } from '../../src/store/store.js';

/**
 * Makes a token and stores it, as POST /tokens and `token create` do: the secret is returned once and
 * only its hash is stored.
 */
export async function issueToken(store: Store, req: TokenRequest): Promise<{ secret: string; record: TokenRecord }> {
  const { secret, record } = newToken(req);
  return { secret, record: await store.tokens.createToken(record).catch(tokenCreateFailure) };
}
