/**
 * The one string every webhook is signed over (docs/api.md, "Webhook signature"): the URL exactly as the request
 * goes on the wire, which is also what a receiver can rebuild from what it gets, `scheme://` + the Host header +
 * the request target:
 *
 *   scheme, lower case   `HTTPS://…` → `https://…`
 *   host, lower case     `Hooks.Example.com` → `hooks.example.com`; a non-ASCII name in its punycode form
 *   port only if not the scheme's default   `http://h:80/x` → `http://h/x`; `http://h:8080/x` stays
 *   path                 `/` when empty; characters a request line cannot carry (space, non-ASCII) are
 *                        percent-encoded as UTF-8; escapes already there are kept as written (`%2F` stays `%2F`)
 *   query                kept as written (the same encoding rule); a bare `?` with nothing after it is dropped
 *   never                the `#fragment` (not sent) nor `user:password@` (sent as an Authorization header)
 *
 * The guarded fetch (guarded-fetch.ts) sends exactly this: Node writes the Host header from the URL's host and
 * the request target from its pathname and search, which is what this function keeps. It is idempotent:
 * requestUrl(requestUrl(u)) === requestUrl(u). A string that is not an absolute http(s) URL is returned as given
 * (the request is then refused with URL_INVALID and nothing is signed that could be sent).
 */
export function requestUrl(input: string | URL): string {
  if (typeof input !== 'string') return serialise(input);
  let wire = known.get(input);
  if (wire === undefined) {
    if (known.size >= MAX_KNOWN) known.clear();
    wire = serialise(input);
    known.set(input, wire);
  }
  return wire;
}

/**
 * URLs already serialised, by the string given: a status callback's URL was parsed three times per attempt (to send,
 * to sign, for the reply), and an account has a handful of URLs. Bounded; emptied when full.
 */
const MAX_KNOWN = 1024;
const known = new Map<string, string>();

function serialise(input: string | URL): string {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    return String(input);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return String(input);
  return `${url.protocol}//${url.host}${url.pathname}${url.search}`;
}
