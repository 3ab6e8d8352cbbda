/**
 * Keys sent in SIP INFO (the in-dialog method of RFC 6086, used for DTMF by many phones and carriers before RFC
 * 4733 was common). Neither body has an RFC; both are de facto:
 * - `application/dtmf-relay` (Cisco): lines `Signal=5` and `Duration=160` (ms), in any order.
 * - `application/dtmf`: the key alone, as the whole body (`5`).
 * Signals 10-15 are also accepted as RFC 4733 event numbers (10 = '*', 11 = '#', 12-15 = A-D), as some phones
 * send them. Anything else, or a body past MAX_DTMF_INFO_BYTES, is not a key.
 */
export const MAX_DTMF_INFO_BYTES = 256;

export interface InfoDigit {
  readonly digit: string;
  /** Milliseconds, when the body said (Duration=); 0 when not. */
  readonly durationMs: number;
}

const EVENT_KEYS: Readonly<Record<string, string>> = {
  '10': '*',
  '11': '#',
  '12': 'A',
  '13': 'B',
  '14': 'C',
  '15': 'D',
};

function keyOf(signal: string): string | undefined {
  const s = signal.trim().toUpperCase();
  if (/^[0-9*#A-D]$/.test(s)) return s;
  return EVENT_KEYS[s];
}

/** The key a DTMF INFO carries, or undefined when the INFO is not one (another body type, or no valid key). */
export function parseDtmfInfo(contentType: string | undefined, body: Buffer | string): InfoDigit | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/dtmf-relay' && type !== 'application/dtmf') return undefined;
  if (Buffer.byteLength(body) > MAX_DTMF_INFO_BYTES) return undefined;
  const text = typeof body === 'string' ? body : body.toString('latin1');
  if (type === 'application/dtmf') {
    const digit = keyOf(text);
    return digit === undefined ? undefined : { digit, durationMs: 0 };
  }
  let digit: string | undefined;
  let durationMs = 0;
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(signal|duration)\s*=\s*(.*?)\s*$/i.exec(line);
    if (!m) continue;
    if (m[1]!.toLowerCase() === 'signal') digit = keyOf(m[2]!);
    else if (/^\d{1,5}$/.test(m[2]!)) durationMs = Number(m[2]);
  }
  return digit === undefined ? undefined : { digit, durationMs };
}
