// How text from settings is shown to a person (doctor, `serve --help`, refusals, log lines): on one
// line, and with the secrets a URL may hold masked. One place, so that every way a value is shown
// masks and escapes alike.

/** Characters that would break a line or hide themselves: controls, format characters, separators. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `text` with each control or invisible character escaped (\n, \r, \t, else \uXXXX), so that a value
 * holding a line break shows as the one line it was written on (`"a\nb"` in a settings file) and cannot
 * pass for a line of the output of its own. Backslashes are left as they are: a value is shown as typed.
 */
export function oneLine(text: string): string {
  return text.replace(INVISIBLE, (c) => NAMED[c] ?? c.split('').map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''));
}

/**
 * Query parameters whose value is taken for a secret: node-postgres's password= and sslpassword= (the
 * passphrase of sslkey), and the names services give API keys, tokens and signatures. sslkey, sslcert
 * and passfile name files, not secrets, and are shown.
 */
const SECRET_PARAMETER = /password|passwd|passphrase|secret|token|credential|^(pwd|pass|key|api[-_]?key|sig|signature|auth)$/i;

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return text;
  }
}

/** The URL with its secrets masked, and whether there were any; null when it is no URL. */
function masked(value: string): { shown: string; secret: boolean } | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  let secret = false;
  if (url.password !== '') {
    url.password = '***';
    secret = true;
  }
  // On the query as written, parameter by parameter, so that the others keep their spelling.
  const query = url.search.slice(1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0 || eq === pair.length - 1 || !SECRET_PARAMETER.test(decoded(pair.slice(0, eq)))) return pair;
    secret = true;
    return `${pair.slice(0, eq)}=***`;
  });
  if (url.search !== '') url.search = query.join('&');
  // Unchanged when nothing is masked: URL's own spelling would add a slash to an issuer, whose text
  // tokens must match exactly.
  return { shown: secret ? url.toString() : value, secret };
}

/**
 * A URL setting as it may be shown: the password of its user part and the values of password-like
 * query parameters (SECRET_PARAMETER) as ***, control characters escaped. Text that is no URL is not
 * shown past its scheme, since where its password is cannot be told.
 */
export function shownUrl(value: string): string {
  const m = masked(value);
  if (m === null) {
    const scheme = /^[a-z][a-z\d+.-]*:/i.exec(value)?.[0];
    return `${scheme === undefined ? '' : `${scheme}… `}(not shown: not a URL, and it may hold a password)`;
  }
  return oneLine(m.shown);
}

/** Whether shownUrl would mask something in `value`: it holds a password or a secret parameter. */
export function urlHoldsSecret(value: string): boolean {
  return masked(value)?.secret ?? false;
}
