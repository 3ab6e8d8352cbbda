/**
 * Back-to-back user agent: an incoming INVITE bridged to an outgoing one (drachtio-srf's createB2BUA).
 * Provisional responses are passed back (RFC 3261 §16.7 step 5 by analogy), a CANCEL from the caller cancels
 * the callee leg, the callee's final failure is mapped to the caller, and a BYE on either leg ends the other.
 */
import { SipCanceledError, SipError, SipResponseError } from '../errors.js';
import type { SipRequest, Uri } from '../message/index.js';
import type { Dialog } from '../dialog/dialog.js';
import type { Responder } from './responder.js';
import type { UacOptions, UasOptions } from './leg-options.js';

/** All the B2BUA needs of a user agent: making its two legs. UserAgent is one. */
export interface B2buaLegFactory {
  createUAC(uri: string | Uri, opts: UacOptions): Promise<Dialog>;
  createUAS(req: SipRequest, opts: UasOptions): Promise<Dialog>;
}

export interface B2buaOptions extends Omit<UacOptions, 'signal' | 'localSdp'> {
  /** SDP offered to the callee; default the caller's offer. */
  localSdpB?: string;
  /** SDP answered to the caller; default the callee's answer. */
  localSdpA?: string | ((remoteSdpB: string | undefined) => string | undefined);
  /** Maps the callee's failure status to the caller's (default: the same, 401/407 become 503 — their challenge is for us). */
  mapStatus?: (status: number) => number;
  /** Headers for the response to the caller. */
  responseHeaders?: Record<string, string | string[]>;
}

export interface B2buaLegs {
  uas: Dialog;
  uac: Dialog;
}

const defaultMap = (s: number): number => (s === 401 || s === 407 ? 503 : s);

export async function createB2BUA(
  ua: B2buaLegFactory,
  req: SipRequest,
  srv: Responder,
  uri: string | Uri,
  opts: B2buaOptions = {},
): Promise<B2buaLegs> {
  const { localSdpB, localSdpA, mapStatus = defaultMap, responseHeaders, ...uacOpts } = opts;
  let uac: Dialog;
  try {
    uac = await ua.createUAC(uri, {
      ...uacOpts,
      localSdp: localSdpB ?? (req.body.length > 0 ? req.text : undefined),
      signal: srv.signal,
      onProvisional: (res) => {
        uacOpts.onProvisional?.(res);
        if (res.status > 100 && !srv.finalResponse) {
          srv.send(res.status, res.reason, res.body.length > 0 ? { body: res.body } : {});
        }
      },
    });
  } catch (err) {
    if (err instanceof SipCanceledError) throw err; // the caller already got 487 (§9.2)
    const status = err instanceof SipError ? err.status : 500;
    const reason = err instanceof SipResponseError ? err.reason : undefined;
    const mapped = mapStatus(status);
    srv.send(mapped, mapped === status ? reason : undefined);
    throw err;
  }
  const sdpA = typeof localSdpA === 'function' ? localSdpA(uac.remoteSdp) : (localSdpA ?? uac.remoteSdp);
  let uas: Dialog;
  try {
    uas = await ua.createUAS(req, { localSdp: sdpA, headers: responseHeaders });
  } catch (err) {
    await uac.bye();
    throw err;
  }
  uas.on('destroy', () => void uac.bye());
  uac.on('destroy', () => void uas.bye());
  return { uas, uac };
}
