/**
 * The two markers of the secret mechanism (src/common/secret-fields.ts) and the text helpers it shares with
 * worker threads. Pure and dependency-free: a worker may import it.
 */

/**
 * What a caller who may not read a secret gets in its place (Alertmanager's own marker). Sending it back on a
 * write keeps the stored value.
 */
export const SECRET_PLACEHOLDER = '<secret>';

/** What records (audit rows, activity events, webhook event bodies, log lines) show instead of a secret. */
export const REDACTED = '[redacted]';

/** scheme://[userinfo@]rest[?query][#fragment] */
const ABSOLUTE_URL = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*@)?([^?#]*)(\?[^#]*)?(#.*)?$/i;

/**
 * A URL with the parts that carry credentials replaced by `marker`: the userinfo (`user:password@`), the value of
 * every query parameter (a bare parameter whole) and the fragment. Scheme, host, port, path and the names of the
 * query parameters stay, so the URL still says where it points. Text that is not an absolute URL is returned as it is.
 */
export function redactUrlSecrets(url: string, marker: string = REDACTED): string {
  const m = ABSOLUTE_URL.exec(url);
  if (!m) return url;
  const [, scheme, userinfo, rest, query, fragment] = m;
  let out = scheme + (userinfo ? `${marker}@` : '') + rest;
  if (query !== undefined) {
    const params = query
      .slice(1)
      .split('&')
      .map((p) => {
        if (p === '') return p;
        const eq = p.indexOf('=');
        if (eq < 0) return marker;
        return eq === p.length - 1 ? p : `${p.slice(0, eq + 1)}${marker}`;
      });
    out += `?${params.join('&')}`;
  }
  if (fragment !== undefined) out += fragment.length > 1 ? `#${marker}` : fragment;
  return out;
}

/** True when the URL has a part redactUrlSecrets would replace. */
export function urlHasSecrets(url: string): boolean {
  return redactUrlSecrets(url, '\u0000') !== url;
}

/** URLs inside free text (activity sentences, log messages, error texts). */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/** Free text with every URL in it passed through redactUrlSecrets. */
export function redactUrlsInText(text: string, marker: string = REDACTED): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, (url) => redactUrlSecrets(url, marker));
}
