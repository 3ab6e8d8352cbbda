import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Time-based one-time passwords (RFC 6238) over HOTP (RFC 4226): HMAC-SHA-1, 30-second steps counted from the
 * Unix epoch, 6 digits. Written here rather than taken from a package so the portal's second factor has no
 * dependency beyond node:crypto.
 */
export const TOTP_STEP_SECONDS = 30;
export const TOTP_DIGITS = 6;

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export class Base32Error extends Error {
  readonly code = 'BASE32_INVALID';
}

/** RFC 4648 section 6 base32, without padding (what authenticator apps expect in otpauth:// URIs). */
export function base32Encode(buf: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const v = B32.indexOf(ch);
    if (v < 0) throw new Base32Error(`not a base32 character: ${JSON.stringify(ch)}`);
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A fresh 160-bit secret (RFC 4226 section 4 recommends at least 160 bits), base32. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

/** HOTP (RFC 4226 section 5.3): HMAC over the 8-byte big-endian counter, dynamic truncation, modulo 10^digits. */
export function hotp(key: Buffer, counter: number, digits = TOTP_DIGITS, algorithm = 'sha1'): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(algorithm, key).update(msg).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const bin = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return String(bin).padStart(digits, '0');
}

/** The RFC 6238 time step T = floor((unixSeconds - T0) / X), T0 = 0. */
export const totpStep = (unixMs: number): number => Math.floor(unixMs / 1000 / TOTP_STEP_SECONDS);

export function totp(secretBase32: string, unixMs: number, digits = TOTP_DIGITS, algorithm = 'sha1'): string {
  return hotp(base32Decode(secretBase32), totpStep(unixMs), digits, algorithm);
}

/**
 * Checks a code against the steps now-1, now and now+1 (RFC 6238 section 5.2 allows one step of clock drift).
 * Returns the matching step so the caller can refuse a replay of the same or an earlier step, or null.
 */
export function verifyTotp(secretBase32: string, code: string, unixMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const key = base32Decode(secretBase32);
  const now = totpStep(unixMs);
  let found: number | null = null;
  for (const step of [now - 1, now, now + 1]) {
    // Every candidate is compared (no early exit) in constant time.
    if (timingSafeEqual(Buffer.from(hotp(key, step)), Buffer.from(code)) && found === null) found = step;
  }
  return found;
}

/**
 * Verifies a one-time code of `holder` and spends it: the accepted step must be later than the last accepted one
 * (RFC 6238 section 5.2: a verifier must not accept the same OTP twice). `advance` records the step with an update
 * conditional on the step stored, so two concurrent requests with the same code cannot both pass.
 */
export async function spendTotpCode(
  holder: { totp_secret: string; totp_last_step: number } | undefined,
  code: string,
  nowMs: number,
  advance: (step: number) => Promise<boolean>,
): Promise<boolean> {
  if (!holder) return false;
  const step = verifyTotp(holder.totp_secret, code, nowMs);
  if (step === null || step <= holder.totp_last_step) return false;
  return advance(step);
}

/** The Key URI Format authenticator apps read from a QR code or paste: otpauth://totp/Issuer:label?secret=... */
export function otpauthUri(secretBase32: string, accountLabel: string, issuer = 'Simu'): string {
  const label = encodeURIComponent(`${issuer}:${accountLabel}`);
  const q = new URLSearchParams({
    secret: secretBase32,
    issuer,
    algorithm: 'SHA1',
    digits: String(TOTP_DIGITS),
    period: String(TOTP_STEP_SECONDS),
  });
  return `otpauth://totp/${label}?${q.toString()}`;
}
