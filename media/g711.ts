/**
 * G.711 (ITU-T G.711) mu-law and A-law, the two codecs every SIP peer speaks. Decoding is a 256-entry table;
 * encoding follows the segment/quantisation rules of the recommendation (bias 0x84 for mu-law, even-bit
 * inversion 0x55 for A-law).
 */
const MULAW_BIAS = 0x84;
const MULAW_CLIP = 32635;

export function mulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const sign = u & 0x80;
  const exponent = (u >> 4) & 0x07;
  const mantissa = u & 0x0f;
  const magnitude = (((mantissa << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS;
  return sign ? -magnitude : magnitude;
}

export function linearToMulaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > MULAW_CLIP) s = MULAW_CLIP;
  s += MULAW_BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent -= 1;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

export function alawToLinear(byte: number): number {
  const a = byte ^ 0x55;
  const sign = a & 0x80;
  const exponent = (a >> 4) & 0x07;
  const mantissa = a & 0x0f;
  let magnitude = exponent === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
  if (magnitude > 32767) magnitude = 32767;
  return sign ? magnitude : -magnitude;
}

export function linearToAlaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s >= 0 ? 0x80 : 0;
  if (s < 0) s = -s - 1;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent -= 1;
  const mantissa = exponent === 0 ? (s >> 4) & 0x0f : (s >> (exponent + 3)) & 0x0f;
  return (sign | (exponent << 4) | mantissa) ^ 0x55;
}

/**
 * The one set of G.711 lookup tables, built once from the functions above: a byte decodes through a 256-entry
 * table and a 16-bit sample encodes through a 65,536-entry table indexed by its two's-complement bits
 * (`sample & 0xffff`), so the mixer's 20 ms frame is 160 loads each way and nothing is allocated per tick.
 */
export const MULAW_DECODE = Int16Array.from({ length: 256 }, (_, i) => mulawToLinear(i));
export const ALAW_DECODE = Int16Array.from({ length: 256 }, (_, i) => alawToLinear(i));

function encodeTable(encode: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(65536);
  for (let s = -32768; s < 32768; s += 1) table[s & 0xffff] = encode(s);
  return table;
}

export const MULAW_ENCODE = encodeTable(linearToMulaw);
export const ALAW_ENCODE = encodeTable(linearToAlaw);

/** Static payload types of RFC 3551 section 6: 0 = PCMU, 8 = PCMA. */
export type G711PayloadType = 0 | 8;

export function decodeTable(pt: G711PayloadType): Int16Array {
  return pt === 0 ? MULAW_DECODE : ALAW_DECODE;
}

export function encodeTableFor(pt: G711PayloadType): Uint8Array {
  return pt === 0 ? MULAW_ENCODE : ALAW_ENCODE;
}

export function decodeG711(payload: Uint8Array, payloadType: G711PayloadType): Int16Array {
  const table = decodeTable(payloadType);
  const out = new Int16Array(payload.length);
  for (let i = 0; i < payload.length; i += 1) out[i] = table[payload[i] ?? 0] ?? 0;
  return out;
}

export function encodeG711(samples: Int16Array, payloadType: G711PayloadType): Buffer {
  const out = Buffer.alloc(samples.length);
  const table = encodeTableFor(payloadType);
  for (let i = 0; i < samples.length; i += 1) out[i] = table[(samples[i] ?? 0) & 0xffff] ?? 0;
  return out;
}

/** Root mean square of a block of samples, in linear units (full scale 32768). */
export function rms(samples: Int16Array, start = 0, end = samples.length): number {
  let sum = 0;
  for (let i = start; i < end; i += 1) {
    const v = samples[i] ?? 0;
    sum += v * v;
  }
  return end > start ? Math.sqrt(sum / (end - start)) : 0;
}
