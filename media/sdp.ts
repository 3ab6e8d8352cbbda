/**
 * The little SDP (RFC 8866) we read and write ourselves: rtpengine rewrites the SDP of real legs, so we only
 * need to find where a session's audio goes and to describe our own IVR endpoint (RFC 3264 offer/answer).
 */
export interface AudioEndpoint {
  address: string;
  port: number;
  payloadTypes: number[];
}

export function audioEndpoint(sdp: string): AudioEndpoint | undefined {
  const lines = sdp.split(/\r?\n/);
  let address = '';
  let media: AudioEndpoint | undefined;
  for (const line of lines) {
    const c = /^c=IN IP[46] (\S+)/.exec(line);
    if (c?.[1]) {
      if (media) media.address = c[1];
      else address = c[1];
    }
    const m = /^m=audio (\d+) \S+ ?(.*)$/.exec(line);
    if (m?.[1] && !media)
      media = { address, port: Number(m[1]), payloadTypes: (m[2] ?? '').split(' ').filter(Boolean).map(Number) };
  }
  return media;
}

/** rtpmap entries of the audio section: payload type to encoding name (upper case), e.g. 0 -> PCMU. */
export function rtpmaps(sdp: string): Map<number, string> {
  const map = new Map<number, string>([
    [0, 'PCMU'],
    [8, 'PCMA'],
    [9, 'G722'],
  ]);
  for (const m of sdp.matchAll(/^a=rtpmap:(\d+) ([^/\s]+)/gm)) map.set(Number(m[1]), (m[2] ?? '').toUpperCase());
  return map;
}

export function sdpAttribute(sdp: string, name: string): string | undefined {
  const m = new RegExp(`^a=${name}:(.*)$`, 'm').exec(sdp);
  return m?.[1]?.trim();
}

export type AudioCodec = 'PCMU' | 'PCMA' | 'G722' | 'opus' | 'telephone-event';

const CODEC_LINES: Record<AudioCodec, { pt: number; rtpmap: string; fmtp?: string }> = {
  PCMU: { pt: 0, rtpmap: 'PCMU/8000' },
  PCMA: { pt: 8, rtpmap: 'PCMA/8000' },
  G722: { pt: 9, rtpmap: 'G722/8000' },
  opus: { pt: 111, rtpmap: 'opus/48000/2', fmtp: 'minptime=10;useinbandfec=1' },
  'telephone-event': { pt: 101, rtpmap: 'telephone-event/8000', fmtp: '0-16' },
};

/** A plain RTP/AVP audio description for an endpoint we own (our IVR sink, test peers). */
export function plainAudioSdp(opts: {
  address: string;
  port: number;
  codecs: AudioCodec[];
  sessionId?: number;
  direction?: 'sendrecv' | 'sendonly' | 'recvonly';
  /** Payload types other than the usual ones, e.g. to answer with the offer's number for telephone-event. */
  payloadTypes?: Partial<Record<AudioCodec, number>>;
}): string {
  const ip = opts.address.includes(':') ? 'IP6' : 'IP4';
  const codecs = opts.codecs.map((c) => {
    const pt = opts.payloadTypes?.[c];
    return pt === undefined ? CODEC_LINES[c] : { ...CODEC_LINES[c], pt };
  });
  const lines = [
    'v=0',
    `o=- ${opts.sessionId ?? 1} 1 IN ${ip} ${opts.address}`,
    's=simu',
    `c=IN ${ip} ${opts.address}`,
    't=0 0',
    `m=audio ${opts.port} RTP/AVP ${codecs.map((c) => c.pt).join(' ')}`,
  ];
  for (const c of codecs) {
    lines.push(`a=rtpmap:${c.pt} ${c.rtpmap}`);
    if (c.fmtp) lines.push(`a=fmtp:${c.pt} ${c.fmtp}`);
  }
  lines.push('a=ptime:20', `a=${opts.direction ?? 'sendrecv'}`);
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * Keep only the named codecs in every m= section (by rtpmap name, case-insensitive, plus static 0/8/9 when
 * named). Used on an offer before rtpengine sees it: rtpengine 10.5 answers an offerer with a codec both sides
 * share whenever there is one (no transcoding), whatever mask/strip flags say, so to keep a browser on Opus
 * against a G.711 far end the browser's G.711 has to be gone from its offer.
 */
export function keepCodecs(sdp: string, keep: string[]): string {
  const wanted = new Set(keep.map((k) => k.toLowerCase()));
  const names = rtpmaps(sdp);
  const dropped = new Set<string>();
  for (const [pt, name] of names) if (!wanted.has(name.toLowerCase())) dropped.add(String(pt));
  const lines = sdp.split(/\r?\n/);
  const out: string[] = [];
  for (const line of lines) {
    const m = /^(m=\S+ \d+(?:\/\d+)? \S+) (.*)$/.exec(line);
    if (m?.[1] && m[2] !== undefined) {
      const pts = m[2].split(' ').filter((pt) => !dropped.has(pt));
      out.push(`${m[1]} ${pts.join(' ')}`);
      continue;
    }
    const attr = /^a=(?:rtpmap|fmtp|rtcp-fb):(\d+)[ ]/.exec(line);
    if (attr?.[1] && dropped.has(attr[1])) continue;
    out.push(line);
  }
  return out.join('\r\n');
}
