/**
 * G.722 (ITU-T G.722, 64 kbit/s mode: sub-band ADPCM) in TypeScript: 16 kHz linear PCM to one byte per two
 * samples and back. A 24-tap QMF splits the signal into a lower band (0-4 kHz, 6-bit ADPCM) and a higher band
 * (4-8 kHz, 2-bit ADPCM); each band has its own adaptive quantiser scale and pole-zero predictor (the recommendation's
 * blocks 1-6). The tables are the recommendation's. Each codec object keeps one direction's state; nothing is
 * allocated per call once constructed. Checked against rtpengine's own G.722 (test/media/mixer/g722.test.ts).
 */
const QMF = [3, -11, 12, 32, -210, 951, 3876, -805, 362, -156, 53, -11];
const Q6 = [
  0, 35, 72, 110, 150, 190, 233, 276, 323, 370, 422, 473, 530, 587, 650, 714, 786, 858, 940, 1023, 1121, 1219, 1339,
  1458, 1612, 1765, 1980, 2195, 2557, 2919, 0, 0,
];
const ILN = [
  0, 63, 62, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
  0,
];
const ILP = [
  0, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33,
  32, 0,
];
const WL = [-60, -30, 58, 172, 334, 538, 1198, 3042];
const RL42 = [0, 7, 6, 5, 4, 3, 2, 1, 7, 6, 5, 4, 3, 2, 1, 0];
const ILB = [
  2048, 2093, 2139, 2186, 2233, 2282, 2332, 2383, 2435, 2489, 2543, 2599, 2656, 2714, 2774, 2834, 2896, 2960, 3025,
  3091, 3158, 3228, 3298, 3371, 3444, 3520, 3597, 3676, 3756, 3838, 3922, 4008,
];
const QM4 = [0, -20456, -12896, -8968, -6288, -4240, -2584, -1200, 20456, 12896, 8968, 6288, 4240, 2584, 1200, 0];
const QM6 = [
  -136, -136, -136, -136, -24808, -21904, -19008, -16704, -14984, -13512, -12280, -11192, -10232, -9360, -8576, -7856,
  -7192, -6576, -6000, -5456, -4944, -4464, -4008, -3576, -3168, -2776, -2400, -2032, -1688, -1360, -1040, -728, 24808,
  21904, 19008, 16704, 14984, 13512, 12280, 11192, 10232, 9360, 8576, 7856, 7192, 6576, 6000, 5456, 4944, 4464, 4008,
  3576, 3168, 2776, 2400, 2032, 1688, 1360, 1040, 728, 432, 136, -432, -136,
];
const QM2 = [-7408, -1616, 7408, 1616];
const IHN = [0, 1, 0];
const IHP = [0, 3, 2];
const WH = [0, -214, 798];
const RH2 = [2, 1, 2, 1];

function sat(v: number): number {
  return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

/** One sub-band's adaptive state: quantiser scale (det, nb) and the pole-zero predictor (blocks 4 and 6). */
class Band {
  s = 0;
  sp = 0;
  sz = 0;
  readonly r = [0, 0, 0];
  readonly a = [0, 0, 0];
  readonly ap = [0, 0, 0];
  readonly p = [0, 0, 0];
  readonly d = [0, 0, 0, 0, 0, 0, 0];
  readonly b = [0, 0, 0, 0, 0, 0, 0];
  readonly bp = [0, 0, 0, 0, 0, 0, 0];
  readonly sg = [0, 0, 0, 0, 0, 0, 0];
  nb = 0;
  det: number;

  constructor(det: number) {
    this.det = det;
  }

  /** Block 3: the log scale factor after a code (`w` its weight), then the linear scale (`shift` 8 low, 10 high). */
  scale(w: number, max: number, shift: number): void {
    let nb = ((this.nb * 127) >> 7) + w;
    if (nb < 0) nb = 0;
    else if (nb > max) nb = max;
    this.nb = nb;
    const wd1 = (nb >> 6) & 31;
    const wd2 = shift - (nb >> 11);
    const wd3 = wd2 < 0 ? ILB[wd1]! << -wd2 : ILB[wd1]! >> wd2;
    this.det = wd3 << 2;
  }

  /** Block 4: reconstruct, update the predictor's poles and zeros with quantised difference `d`, predict. */
  update(d: number): void {
    const { r, a, ap, p, b, bp, sg } = this;
    const dd = this.d;
    dd[0] = d;
    r[0] = sat(this.s + d);
    p[0] = sat(this.sz + d);
    // UPPOL2
    for (let i = 0; i < 3; i += 1) sg[i] = p[i]! >> 15;
    let wd1 = sat(a[1]! << 2);
    let wd2 = sg[0] === sg[1] ? -wd1 : wd1;
    if (wd2 > 32767) wd2 = 32767;
    let wd3 = (sg[0] === sg[2] ? 128 : -128) + (wd2 >> 7) + ((a[2]! * 32512) >> 15);
    if (wd3 > 12288) wd3 = 12288;
    else if (wd3 < -12288) wd3 = -12288;
    ap[2] = wd3;
    // UPPOL1
    sg[0] = p[0]! >> 15;
    sg[1] = p[1]! >> 15;
    wd1 = sg[0] === sg[1] ? 192 : -192;
    wd2 = (a[1]! * 32640) >> 15;
    ap[1] = sat(wd1 + wd2);
    wd3 = sat(15360 - ap[2]!);
    if (ap[1]! > wd3) ap[1] = wd3;
    else if (ap[1]! < -wd3) ap[1] = -wd3;
    // UPZERO
    wd1 = d === 0 ? 0 : 128;
    sg[0] = d >> 15;
    for (let i = 1; i < 7; i += 1) {
      sg[i] = dd[i]! >> 15;
      wd2 = sg[i] === sg[0] ? wd1 : -wd1;
      wd3 = (b[i]! * 32640) >> 15;
      bp[i] = sat(wd2 + wd3);
    }
    // DELAYA
    for (let i = 6; i > 0; i -= 1) {
      dd[i] = dd[i - 1]!;
      b[i] = bp[i]!;
    }
    for (let i = 2; i > 0; i -= 1) {
      r[i] = r[i - 1]!;
      p[i] = p[i - 1]!;
      a[i] = ap[i]!;
    }
    // FILTEP, FILTEZ, PREDIC
    wd1 = (a[1]! * sat(r[1]! + r[1]!)) >> 15;
    wd2 = (a[2]! * sat(r[2]! + r[2]!)) >> 15;
    this.sp = sat(wd1 + wd2);
    let sz = 0;
    for (let i = 6; i > 0; i -= 1) sz += (b[i]! * sat(dd[i]! + dd[i]!)) >> 15;
    this.sz = sat(sz);
    this.s = sat(this.sp + this.sz);
  }
}

export class G722Encoder {
  readonly #x = new Int32Array(24);
  readonly #low = new Band(32);
  readonly #high = new Band(8);

  /** Encodes 16 kHz samples (an even count) into `out` (one byte per two samples); returns the bytes written. */
  encode(samples: Int16Array, out: Uint8Array): number {
    const x = this.#x;
    const low = this.#low;
    const high = this.#high;
    let n = 0;
    for (let j = 0; j + 1 < samples.length; j += 2) {
      x.copyWithin(0, 2);
      x[22] = samples[j]!;
      x[23] = samples[j + 1]!;
      let sumOdd = 0;
      let sumEven = 0;
      for (let i = 0; i < 12; i += 1) {
        sumOdd += x[2 * i]! * QMF[i]!;
        sumEven += x[2 * i + 1]! * QMF[11 - i]!;
      }
      const xlow = (sumEven + sumOdd) >> 14;
      const xhigh = (sumEven - sumOdd) >> 14;
      // Lower band: 6-bit quantiser (block 1L), 4-bit inverse for the predictor (2L), scale (3L), predictor (4L).
      const el = sat(xlow - low.s);
      let wd = el >= 0 ? el : -(el + 1);
      let i = 1;
      for (; i < 30; i += 1) if (wd < (Q6[i]! * low.det) >> 12) break;
      const ilow = el < 0 ? ILN[i]! : ILP[i]!;
      const ril = ilow >> 2;
      const dlow = (low.det * QM4[ril]!) >> 15;
      low.scale(WL[RL42[ril]!]!, 18432, 8);
      low.update(dlow);
      // Higher band: 2-bit quantiser (1H), inverse (2H), scale (3H), predictor (4H).
      const eh = sat(xhigh - high.s);
      wd = eh >= 0 ? eh : -(eh + 1);
      const mih = wd >= (564 * high.det) >> 12 ? 2 : 1;
      const ihigh = eh < 0 ? IHN[mih]! : IHP[mih]!;
      const dhigh = (high.det * QM2[ihigh]!) >> 15;
      high.scale(WH[RH2[ihigh]!]!, 22528, 10);
      high.update(dhigh);
      out[n++] = (ihigh << 6) | ilow;
    }
    return n;
  }
}

export class G722Decoder {
  readonly #x = new Int32Array(24);
  readonly #low = new Band(32);
  readonly #high = new Band(8);

  /** Decodes G.722 bytes into `out` (two 16 kHz samples per byte); returns the samples written. */
  decode(codes: Uint8Array, out: Int16Array): number {
    const x = this.#x;
    const low = this.#low;
    const high = this.#high;
    let n = 0;
    for (let j = 0; j < codes.length; j += 1) {
      const code = codes[j]!;
      const ilow = code & 0x3f;
      const ihigh = (code >> 6) & 0x03;
      // Lower band: 6-bit inverse quantiser for the output (5L), 4-bit for the predictor (2L).
      let rlow = low.s + ((low.det * QM6[ilow]!) >> 15);
      if (rlow > 16383) rlow = 16383;
      else if (rlow < -16384) rlow = -16384;
      const ril = ilow >> 2;
      const dlow = (low.det * QM4[ril]!) >> 15;
      low.scale(WL[RL42[ril]!]!, 18432, 8);
      low.update(dlow);
      const dhigh = (high.det * QM2[ihigh]!) >> 15;
      let rhigh = dhigh + high.s;
      if (rhigh > 16383) rhigh = 16383;
      else if (rhigh < -16384) rhigh = -16384;
      high.scale(WH[RH2[ihigh]!]!, 22528, 10);
      high.update(dhigh);
      // QMF synthesis.
      x.copyWithin(0, 2);
      x[22] = rlow + rhigh;
      x[23] = rlow - rhigh;
      let xout1 = 0;
      let xout2 = 0;
      for (let i = 0; i < 12; i += 1) {
        xout2 += x[2 * i]! * QMF[i]!;
        xout1 += x[2 * i + 1]! * QMF[11 - i]!;
      }
      out[n++] = sat(xout1 >> 11);
      out[n++] = sat(xout2 >> 11);
    }
    return n;
  }
}
