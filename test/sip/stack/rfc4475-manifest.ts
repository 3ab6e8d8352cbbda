/**
 * The expected disposition of each RFC 4475 torture message, in one place. `parse`: parsed and handled as any
 * request would be; `tolerate`: invalid per the RFC but accepted by our tolerant parser (a choice the RFC allows);
 * `reject`: the parser refuses it and, for a request, enough is left to answer with `status`; `drop`: a malformed
 * response is discarded; `answer`: parsed, then the UAS checks of RFC 3261 §8.2 reject it with `status`.
 */
export type Disposition =
  | { kind: 'parse' }
  | { kind: 'tolerate'; why: string }
  | { kind: 'reject'; status: number }
  | { kind: 'drop' }
  | { kind: 'answer'; status: number };

const parse = { kind: 'parse' } as const;
const reject = (status = 400) => ({ kind: 'reject', status }) as const;
const answer = (status: number) => ({ kind: 'answer', status }) as const;
const drop = { kind: 'drop' } as const;

export const MANIFEST: Record<string, Disposition> = {
  // 3.1.1 valid
  'syntax-valid/wsinv.dat': parse,
  'syntax-valid/intmeth.dat': parse,
  'syntax-valid/esc01.dat': parse,
  'syntax-valid/escnull.dat': parse,
  'syntax-valid/esc02.dat': parse,
  'syntax-valid/lwsdisp.dat': parse,
  'syntax-valid/longreq.dat': parse,
  'syntax-valid/dblreq.dat': parse,
  'syntax-valid/semiuri.dat': parse,
  'syntax-valid/transports.dat': parse,
  'syntax-valid/mpart01.dat': parse,
  'syntax-valid/unreason.dat': parse,
  'syntax-valid/noreason.dat': parse,
  // 3.1.2 invalid
  'syntax-invalid/badinv01.dat': reject(),
  'syntax-invalid/clerr.dat': reject(),
  'syntax-invalid/scalar02.dat': reject(),
  'syntax-invalid/scalarlg.dat': drop,
  'syntax-invalid/quotbal.dat': reject(),
  'syntax-invalid/ltgtruri.dat': reject(),
  'syntax-invalid/lwsruri.dat': reject(),
  'syntax-invalid/lwsstart.dat': reject(),
  'syntax-invalid/trws.dat': { kind: 'tolerate', why: 'trailing whitespace after SIP/2.0 is trimmed' },
  'syntax-invalid/escruri.dat': reject(),
  'syntax-invalid/baddate.dat': { kind: 'tolerate', why: 'Date is never interpreted by the stack' },
  'syntax-invalid/regbadct.dat': reject(),
  'syntax-invalid/badaspec.dat': { kind: 'tolerate', why: 'whitespace inside <> around a URI is trimmed' },
  'syntax-invalid/baddn.dat': reject(),
  'syntax-invalid/badvers.dat': reject(505),
  'syntax-invalid/mismatch01.dat': reject(),
  'syntax-invalid/mismatch02.dat': reject(),
  'syntax-invalid/bigcode.dat': drop,
  'syntax-invalid/ncl.dat': reject(),
  // 3.2 transaction
  'transaction/badbranch.dat': parse,
  // 3.3 application
  'application/insuf.dat': reject(),
  'application/unkscm.dat': answer(416),
  'application/novelsc.dat': answer(416),
  'application/unksm2.dat': parse,
  'application/bext01.dat': answer(420),
  'application/invut.dat': answer(415),
  'application/regaut01.dat': parse,
  'application/multi01.dat': reject(),
  'application/mcl01.dat': reject(),
  'application/bcast.dat': parse,
  'application/zeromf.dat': answer(483),
  'application/cparam01.dat': parse,
  'application/cparam02.dat': parse,
  'application/regescrt.dat': parse,
  'application/sdp01.dat': answer(406),
  // 3.4 compat
  'compat/inv2543.dat': parse,
};
