import { alawToLinear, linearToAlaw, linearToMulaw, mulawToLinear } from '../g711.js';

/**
 * G.711 as lookup tables for the mixer's hot path: a byte decodes through a 256-entry table and a 16-bit sample
 * encodes through a 65,536-entry table indexed by its two's-complement bits (`sample & 0xffff`), so a 20 ms frame
 * is 160 loads each way and nothing is allocated per tick. Built once from the reference functions in g711.ts.
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

/** RFC 3551 static payload types the mixer speaks: 0 = PCMU, 8 = PCMA. */
export type G711PayloadType = 0 | 8;

export function decodeTable(pt: G711PayloadType): Int16Array {
  return pt === 0 ? MULAW_DECODE : ALAW_DECODE;
}

export function encodeTableFor(pt: G711PayloadType): Uint8Array {
  return pt === 0 ? MULAW_ENCODE : ALAW_ENCODE;
}
