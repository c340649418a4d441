export const SCOPES = ['plants:read', 'plants:write', 'webhooks:manage'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/**
 * The `tokenId` of a principal established from a JWT: a JWT has no record in this store (`token list`
 * does not show it), so it has no id; real ids start at 1.
 */
export const NO_TOKEN_ID = -1;

/** Who is calling, as established from a bearer token. */
export interface Principal {
  /** The opaque token's id, as `token list` shows it; NO_TOKEN_ID for a JWT. */
  readonly tokenId: number;
  readonly user: string;
  readonly scopes: readonly Scope[];
  /**
   * An admin lists every user's plants; it still creates and deletes only its own. `token create --admin`,
   * or a JWT with the `plants:admin` scope.
   */
  readonly admin: boolean;
}

export const USER_MAX_CHARS = 128;
/**
 * The characters a user name (or a token's name) may not hold, after Unicode's identifier guidance
 * (UAX #31, UTS #39 §3.1: format and control characters are not in identifiers): controls (Cc), which
 * would garble `token list` and logs; format characters (Cf): the bidirectional controls U+200E/F,
 * U+202A–202E and U+2066–2069 (U+202E made `x\u202Ey` display as `y\u202Ex`), the zero-width U+200B–200D
 * and U+FEFF, the soft hyphen, which make two names look alike (an emoji sequence joined by U+200D is
 * refused with them; the joiners where names need them are kept: NAME_JOINERS); unpaired surrogates (Cs); line and paragraph separators (Zl, Zp). Other spaces are
 * allowed inside a name ("Ada Lovelace") but not at its ends, where no one sees them.
 */
const REFUSED_CHAR = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;
const REFUSED_CHARS = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;
/**
 * The two joiners where the same guidance keeps them (UAX #31 §2.3, rules A1, A2 and B), because names
 * need them there: U+200C (zero-width non-joiner) after a letter of a joining script (Arabic, Syriac, N'Ko,
 * Mongolian: Persian writes many names with it) or after a mark such as a virama, before a letter or
 * mark; U+200D (zero-width joiner) after a mark such as a virama, before a letter (Indic conjuncts). A
 * close reading of the rules' context classes; between Latin letters, or joining emoji, both stay refused.
 */
const NAME_JOINERS = /(?<=[\p{Script=Arabic}\p{Script=Syriac}\p{Script=Nko}\p{Script=Mongolian}\p{Mn}])\u200C(?=[\p{L}\p{M}])|(?<=\p{Mn})\u200D(?=\p{L})/gu;

/** The first character of `text` a name may not hold, or undefined. */
const refusedIn = (text: string): string | undefined => REFUSED_CHAR.exec(text.replace(NAME_JOINERS, ''))?.[0];
const EDGE_SPACE = /^\s|\s$/u;

/** U+XXXX, as the Unicode standard names a code point. */
const codePoint = (c: string): string => `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Why a user name is unacceptable, or null when it is fine. The one rule for every way a name comes in:
 * `token create --user`, POST /tokens, a JWT's user claim, an import file; and for a token already in a
 * store, checked when it authenticates (http/auth/opaque.ts).
 */
export function userNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if ([...name].length > USER_MAX_CHARS) return `must be at most ${USER_MAX_CHARS} characters`;
  const refused = refusedIn(name);
  if (refused !== undefined) {
    return `must not contain control characters, invisible format characters (bidirectional controls, zero-width characters), or line and paragraph separators (found ${codePoint(refused)})`;
  }
  if (EDGE_SPACE.test(name)) return 'must not start or end with whitespace';
  return null;
}

/**
 * A name as a table shows it: when it holds a character a name may not (see REFUSED_CHAR), the text of
 * a JSON string (quotes and backslashes escaped, \n for a line break) with every such character escaped
 * as \uXXXX, which JSON.stringify leaves as it is for format characters; so that a name stored before
 * the rule (or a description with a line break) shows what it holds, on one line, rather than its
 * characters reordered or hidden. Other text is shown as it is.
 */
export function visibleText(text: string): string {
  if (refusedIn(text) === undefined) return text;
  const unit = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  return JSON.stringify(text).slice(1, -1).replace(REFUSED_CHARS, (c) => c.split('').map(unit).join(''));
}
