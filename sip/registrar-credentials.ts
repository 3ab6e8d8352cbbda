/**
 * Where the registrar finds the secrets a phone's digest is checked against. A phone uses its phone token (the
 * JWT string) as its digest password, but the store keeps the token's claims, not the string: the string is
 * rebuilt by signing the same claims again with the server secret (HS256 is deterministic), exactly as
 * POST /api/phone-tokens/mint signed them (api/routes/phone-tokens.ts). The only claim not stored is `iat`, taken
 * at mint time just before the row's `created_at` was stamped, so it is that second or the one before.
 */
import { systemClock, type Clock } from '../kit/index.js';
import { claimsOfRow, signPhoneToken } from './phone-token.js';
import {
  onCredentialWrites,
  phoneCredentials,
  type Db,
  type PhoneCredentials,
  type PhoneTokenRow,
} from '../store/index.js';

/** How many of an end-user's most recent tokens a digest is tried against (revoked and expired ones included,
 * so a phone still using a revoked token is told 403 and AUTH.0401, not challenged for ever). */
export const TOKENS_TRIED = 10;

/**
 * Passwords a token may be given as: the JWT and its short form. An unknown extension is padded to this many
 * checks (the same work as a known one). A token from before `issued_at` was stored costs twice as many.
 */
export const CHECKS_PER_TOKEN = 2;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The account of a SIP domain: each account is its own domain, `<account-uuid>` or `<account-uuid>.<anything>`
 * (the first DNS label is the account uuid). Undefined when the first label is not a uuid.
 */
export function accountOfHost(host: string): string | undefined {
  const label = firstLabel(host);
  return UUID_RE.test(label) ? label : undefined;
}

/** The digest realm of a domain: its first label (the account uuid), the same for every user of the account. */
export function realmOfHost(host: string): string {
  return firstLabel(host) || 'simu';
}

/** The first DNS label, lower-cased (without splitting the whole name: this runs for every REGISTER). */
function firstLabel(host: string): string {
  const dot = host.indexOf('.');
  return (dot < 0 ? host : host.slice(0, dot)).toLowerCase();
}

/**
 * The short form of a phone token as a digest password: its signature segment (after the last dot, 43 characters).
 * Many phones cap the password field (SIPp 3.6.1 fails with the ~400-character JWT; desk phones often allow under
 * 100). The signature is an HMAC-SHA256 under the server's key over the token's claims, so it is as unguessable
 * as the whole token and belongs to that token alone; the rest of the JWT is not secret (it is base64 of claims).
 */
export function shortPassword(jwt: string): string {
  return jwt.slice(jwt.lastIndexOf('.') + 1);
}

/**
 * How long a phone's credentials are answered from memory after a store read. A write in this process (a token
 * minted or revoked, an end-user disabled, renumbered or deleted) drops them at once (store onCredentialWrites), and
 * so does one by another process (the CLI, another node) when the store watches other writers (the switch's does);
 * otherwise it is seen after at most this long, or at the registrar's next sweep for a token that authenticated a
 * phone here (tokensInUse). A digest that matches nothing remembered is checked once more against the store, so a
 * token minted elsewhere works at once.
 */
export const CREDENTIALS_TTL_MS = 60_000;
/**
 * The longest a registration keeps its phone's credentials remembered (keep): its registration interval, at most
 * this. The sweep checks the tokens that authenticated, so a revocation elsewhere is seen within one sweep anyway.
 */
export const CREDENTIALS_KEEP_MAX_MS = 7_200_000;
/** Extensions remembered (unknown ones too, so they cost what known ones cost); the oldest go first. */
const MAX_REMEMBERED = 50_000;

export type LookedUp = PhoneCredentials & { fromMemory: boolean };

export class PhoneCredentialStore {
  /** token id -> JWT candidates; tokens are immutable once minted, so this never goes stale. */
  readonly #candidates = new Map<string, string[]>();
  /**
   * `<account>\n<extension>` -> what the store answered, as answered from memory (`recalled`, made once), and until
   * when it is answered from memory.
   */
  readonly #remembered = new Map<string, { value: PhoneCredentials; recalled: LookedUp; until: number }>();
  /** Tokens that authenticated a phone from what is remembered: the ones the sweep checks. */
  readonly #inUse = new Set<string>();
  /** Moves at each credentials write: a read that began before it is not remembered. */
  #generation = 0;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly db: Db,
    private readonly secret: string,
    private readonly clock: Pick<Clock, 'now'> = systemClock,
  ) {
    this.#unsubscribe = onCredentialWrites(db, () => this.forget());
  }

  /** Drops every remembered credential (a write was seen, or the sweep found a token that no longer works). */
  forget(): void {
    this.#generation += 1;
    this.#remembered.clear();
    this.#inUse.clear();
  }

  /** Stops following the store's writes. */
  close(): void {
    this.#unsubscribe();
    this.forget();
  }

  /**
   * A phone of this extension registered until `untilMs`: its credentials stay remembered as long (at most
   * CREDENTIALS_KEEP_MAX_MS from now), so its refreshes read nothing from the store.
   */
  keep(accountId: string, extension: string, untilMs: number): void {
    const hit = this.#remembered.get(`${accountId}\n${extension}`);
    if (hit) hit.until = Math.max(hit.until, Math.min(untilMs, this.clock.now() + CREDENTIALS_KEEP_MAX_MS));
  }

  /** The tokens that authenticated phones from remembered credentials (the sweep checks they still work). */
  tokensInUse(): ReadonlySet<string> {
    return this.#inUse;
  }

  /**
   * The end-user with this extension in this account, enabled or not (the caller refuses a disabled one only after
   * its credentials proved right, so disabled and unknown users cannot be told apart), and its most recent tokens,
   * newest first: one indexed query, the same for unknown accounts and unknown users, remembered for
   * CREDENTIALS_TTL_MS unless `fresh`. A locked-out user's tokens are read too (the same work) and dropped.
   */
  async lookup(accountId: string | undefined, extension: string, locked: boolean, fresh = false): Promise<LookedUp> {
    if (!fresh) {
      const hit = this.recall(accountId, extension, locked);
      if (hit) return hit;
    }
    const key = `${accountId ?? ''}\n${extension}`;
    const generation = this.#generation;
    const c = await phoneCredentials(this.db, accountId ?? '', extension, TOKENS_TRIED);
    if (generation === this.#generation) {
      this.#remembered.delete(key);
      if (this.#remembered.size >= MAX_REMEMBERED) this.#remembered.delete(this.#remembered.keys().next().value!);
      const recalled = { ...c, fromMemory: true };
      this.#remembered.set(key, { value: c, recalled, until: this.clock.now() + CREDENTIALS_TTL_MS });
    }
    return { ...c, tokens: locked ? [] : c.tokens, fromMemory: false };
  }

  /**
   * What lookup() answers from memory, without waiting (undefined when it would read the store). The same object
   * for every refresh of an unlocked user: callers only read it.
   */
  recall(accountId: string | undefined, extension: string, locked: boolean): LookedUp | undefined {
    const hit = this.#remembered.get(`${accountId ?? ''}\n${extension}`);
    if (!hit || this.clock.now() >= hit.until) return undefined;
    return locked ? { ...hit.value, tokens: [], fromMemory: true } : hit.recalled;
  }

  /** The form `password` of the token matched: it is tried first from now on (a phone keeps to one form). */
  matched(row: PhoneTokenRow, password: string): void {
    if (this.#inUse.size >= MAX_REMEMBERED) this.forget(); // bounded: all are read again, once each
    this.#inUse.add(row.id);
    const c = this.#candidates.get(row.id);
    const i = c?.indexOf(password) ?? -1;
    if (c && i > 0) c.unshift(...c.splice(i, 1));
  }

  /** candidates() when they are already known (every time but the first for a token), without waiting. */
  known(row: PhoneTokenRow): string[] | undefined {
    return this.#candidates.get(row.id);
  }

  /** The JWT strings the token could be (see the file comment): the likelier first. */
  async candidates(row: PhoneTokenRow): Promise<string[]> {
    const cached = this.#candidates.get(row.id);
    if (cached) return cached;
    const created = Math.floor(Date.parse(row.created_at) / 1000);
    const iats = row.issued_at != null ? [row.issued_at] : [created, created - 1];
    const claims = claimsOfRow(row);
    const jwts = await Promise.all(iats.map((iat) => signPhoneToken(this.secret, claims, iat)));
    const out = [...jwts, ...jwts.map(shortPassword)];
    if (this.#candidates.size >= 10_000) this.#candidates.delete(this.#candidates.keys().next().value!);
    this.#candidates.set(row.id, out);
    return out;
  }
}
