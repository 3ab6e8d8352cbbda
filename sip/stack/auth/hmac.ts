/**
 * HMAC-SHA256 (RFC 2104) with one key for many messages, computed as two one-shot hashes over key pads made once:
 * the same bytes as `createHmac('sha256', key)`, without the per-call set-up of an HMAC context (its digest lookup
 * was most of the cost of the digest server's nonce tags: two per registration). Messages longer than the scratch
 * space fall back to createHmac.
 */
import { createHmac, hash } from 'node:crypto';

const BLOCK = 64;
/** Longest message (UTF-16 code units) hashed without the fallback: 3 bytes each at most in UTF-8. */
const MAX_CHARS = 128;

export class HmacSha256 {
  readonly #key: Buffer;
  /** Key ^ ipad, then room for the message. */
  readonly #inner = Buffer.alloc(BLOCK + MAX_CHARS * 3);
  /** Key ^ opad, then the inner hash. */
  readonly #outer = Buffer.alloc(BLOCK + 32);

  /** `key` at most one block (64 bytes), as the digest server's 32-byte secret. */
  constructor(key: Buffer) {
    if (key.length > BLOCK) throw new RangeError('HmacSha256: key longer than one block');
    this.#key = Buffer.from(key);
    for (let i = 0; i < BLOCK; i++) {
      const k = key[i] ?? 0;
      this.#inner[i] = k ^ 0x36;
      this.#outer[i] = k ^ 0x5c;
    }
  }

  /** The tag of `text` (UTF-8), base64url. */
  tag(text: string): string {
    if (text.length > MAX_CHARS) return createHmac('sha256', this.#key).update(text).digest('base64url');
    const n = this.#inner.write(text, BLOCK, 'utf8');
    hash('sha256', this.#inner.subarray(0, BLOCK + n), 'buffer').copy(this.#outer, BLOCK);
    return hash('sha256', this.#outer, 'base64url');
  }
}
