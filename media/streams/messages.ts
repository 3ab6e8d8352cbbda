/**
 * Twilio Media Streams messages (https://www.twilio.com/docs/voice/media-streams/websocket-messages), spelled as
 * Twilio spells them so that agent code written for Twilio works unchanged: every field a string where Twilio
 * sends a string (sequenceNumber, chunk, timestamp), `track` "inbound"/"outbound" in media messages and
 * "inbound_track" in dtmf ones, mediaFormat audio/x-mulaw at 8000 Hz, one channel.
 *
 * What the customer's server sends back is untrusted: parseInbound takes a bounded text and answers a typed
 * message or undefined (ignored), never throws.
 */

/** Largest message accepted from the customer's server (a media message of a few seconds of audio fits). */
export const MAX_INBOUND_MESSAGE_BYTES = 256 * 1024;
/** Longest mark name kept. */
export const MAX_MARK_NAME = 256;

export type StreamTrack = 'inbound_track' | 'outbound_track' | 'both_tracks';

export interface StreamStartInfo {
  readonly streamSid: string;
  readonly accountSid: string;
  readonly callSid: string;
  readonly track: StreamTrack;
  readonly customParameters: Readonly<Record<string, string>>;
}

export function connectedMessage(): string {
  return JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' });
}

function tracksOf(track: StreamTrack): string[] {
  if (track === 'both_tracks') return ['inbound', 'outbound'];
  return [track === 'inbound_track' ? 'inbound' : 'outbound'];
}

export function startMessage(seq: number, s: StreamStartInfo): string {
  return JSON.stringify({
    event: 'start',
    sequenceNumber: String(seq),
    start: {
      accountSid: s.accountSid,
      streamSid: s.streamSid,
      callSid: s.callSid,
      tracks: tracksOf(s.track),
      customParameters: s.customParameters,
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
    streamSid: s.streamSid,
  });
}

/**
 * One chunk of audio: `chunk` counts the track's chunks from 1, `timestamp` is ms since the stream started. Written
 * as a template (the hot path: 50 a second per stream); every value in it is digits, base64 or our own sid, so
 * nothing needs escaping, and it reads back as JSON.stringify of the same object would.
 */
export function mediaMessage(
  seq: number,
  streamSid: string,
  track: 'inbound' | 'outbound',
  chunk: number,
  timestampMs: number,
  pcmu: Buffer,
): string {
  return (
    `{"event":"media","sequenceNumber":"${seq}","media":{"track":"${track}","chunk":"${chunk}",` +
    `"timestamp":"${Math.round(timestampMs)}","payload":"${pcmu.toString('base64')}"},"streamSid":"${streamSid}"}`
  );
}

export function markMessage(seq: number, streamSid: string, name: string): string {
  return JSON.stringify({ event: 'mark', sequenceNumber: String(seq), streamSid, mark: { name } });
}

export function dtmfMessage(seq: number, streamSid: string, digit: string): string {
  return JSON.stringify({
    event: 'dtmf',
    streamSid,
    sequenceNumber: String(seq),
    dtmf: { track: 'inbound_track', digit },
  });
}

export function stopMessage(seq: number, streamSid: string, accountSid: string, callSid: string): string {
  return JSON.stringify({ event: 'stop', sequenceNumber: String(seq), stop: { accountSid, callSid }, streamSid });
}

/** What the customer's server may send on a bidirectional stream (<Connect><Stream>). */
export type InboundMessage =
  | { readonly event: 'media'; readonly pcmu: Buffer }
  | { readonly event: 'mark'; readonly name: string }
  | { readonly event: 'clear' };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A message from the customer's server, or undefined for anything else (unknown events, bad JSON, too large). */
export function parseInbound(text: string): InboundMessage | undefined {
  if (text.length > MAX_INBOUND_MESSAGE_BYTES) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const m = value as Record<string, unknown>;
  if (m.event === 'clear') return { event: 'clear' };
  if (m.event === 'mark') {
    const name = (m.mark as { name?: unknown } | undefined)?.name;
    return typeof name === 'string' ? { event: 'mark', name: name.slice(0, MAX_MARK_NAME) } : undefined;
  }
  if (m.event === 'media') {
    const payload = (m.media as { payload?: unknown } | undefined)?.payload;
    if (typeof payload !== 'string' || !BASE64.test(payload)) return undefined;
    return { event: 'media', pcmu: Buffer.from(payload, 'base64') };
  }
  return undefined;
}
