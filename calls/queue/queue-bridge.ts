import type { LegAudioPort } from '../../media/index.js';

/**
 * The audio of two calls the platform answered, joined: each PCMU frame one caller sends at our IVR end of its leg
 * is sent from our IVR end of the other (media/streams/audio-port.ts), so each hears the other through its own
 * rtpengine session. Used for a queue's caller and the agent who took it. Runs until `until` aborts.
 */
export async function bridgeAudio(a: LegAudioPort, b: LegAudioPort, until: AbortSignal): Promise<void> {
  const stops = [a.onReceived((frame) => b.send(frame)), b.onReceived((frame) => a.send(frame))];
  try {
    if (!until.aborted) await new Promise<void>((r) => until.addEventListener('abort', () => r(), { once: true }));
  } finally {
    for (const stop of stops) stop();
  }
}
