import type { NgParams } from './ng-client.js';
import type { AudioCodec } from './sdp.js';

/**
 * ng flags for the side of a call an SDP is produced for.
 *
 * - `rtp`: a SIP peer or carrier: plain RTP/AVP, no ICE, RTCP on its own port.
 * - `webrtc`: a browser (RFC 8829/8834): UDP/TLS/RTP/SAVPF with DTLS-SRTP (RFC 5764), ICE forced (RFC 8445),
 *   rtcp-mux (RFC 5761), and Opus added by transcoding when the other side does not speak it.
 *
 * `codecs` asks rtpengine to offer these codecs to this side even when the other side lacks them (rtpengine
 * transcodes); the other side's own codecs stay offered unless `only` is set.
 */
/** rtp: plain RTP/AVP; srtp: RTP/SAVP with SDES keys (RFC 4568) for phones on TLS; webrtc: DTLS-SRTP with ICE. */
export type LegProfile = 'rtp' | 'srtp' | 'webrtc';

export interface LegMediaOptions {
  profile?: LegProfile;
  codecs?: AudioCodec[];
  /** Offer exactly `codecs` to this side; the offerer keeps its own first codec (transcoded if different). */
  only?: boolean;
}

export function profileFlags(opts: LegMediaOptions = {}, forOffer: boolean): NgParams {
  const profile = opts.profile ?? 'rtp';
  const params: NgParams =
    profile === 'webrtc'
      ? {
          'transport-protocol': 'UDP/TLS/RTP/SAVPF',
          ICE: 'force',
          'rtcp-mux': forOffer ? ['offer', 'require'] : ['require'],
          SDES: ['off'],
          flags: ['generate-mid'],
        }
      : profile === 'srtp'
        ? {
            'transport-protocol': 'RTP/SAVP',
            ICE: 'remove',
            'rtcp-mux': ['demux'],
            DTLS: 'off',
          }
        : {
            'transport-protocol': 'RTP/AVP',
            ICE: 'remove',
            'rtcp-mux': ['demux'],
            DTLS: 'off',
            SDES: ['off'],
          };
  if (forOffer) {
    const codecs = opts.codecs ?? (profile === 'webrtc' ? ['opus', 'PCMU', 'telephone-event'] : undefined);
    if (codecs) {
      const codec: NgParams = { transcode: codecs };
      // Masked codecs are still accepted from the offerer, who keeps its first choice (a browser's Opus); this
      // side sees exactly `codecs`, and rtpengine transcodes between the two when they differ.
      if (opts.only) codec.mask = ['all'];
      params.codec = codec;
    }
  }
  return params;
}
