import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort, nextPorts } from '../../support/ports.js';
import { RtpCapture } from './rtp-capture.js';
import { SCENARIOS, carrierCallsDid, type SippRun } from './harness.js';

/** One caller: a SIPp carrier leg playing its tone, and what it hears, captured on its media port. */
export interface ToneLeg {
  tone: number;
  capture: RtpCapture;
  sipp: SippRun;
}

/**
 * SIPp carrier callers that each play a pure tone (made by sox as raw mu-law, looped by SIPp's rtp_stream) into
 * whatever the DID's document does (scenarios/uac-conference-tone.xml), and hang up after `staySeconds`. SIPp plays
 * from its media port and rtpengine answers to where audio comes from, so what a caller hears is captured there.
 */
export class ToneCallers {
  readonly legs: ToneLeg[] = [];
  #dir: string | undefined;

  #scenario(tone: number, template: string): string {
    this.#dir ??= mkdtempSync(path.join(os.tmpdir(), 'simu-tones-'));
    const file = path.join(this.#dir, `tone-${tone}-${template}`);
    const ulaw = path.join(this.#dir, `tone-${tone}.ulaw`);
    // Two seconds of the tone (a whole number of cycles for these tones), looped for as long as the caller stays.
    execFileSync('sox', [
      '-n',
      '-r',
      '8000',
      '-c',
      '1',
      '-t',
      'ul',
      ulaw,
      'synth',
      '2',
      'sine',
      String(tone),
      'vol',
      '0.25',
    ]);
    writeFileSync(file, readFileSync(path.join(SCENARIOS, template), 'utf8').replaceAll('[tone]', ulaw));
    return file;
  }

  /**
   * With `staySeconds` the caller hangs up then (scenarios/uac-conference-tone.xml); without, it stays until the
   * switch hangs it up (uac-conference-tone-until-bye.xml), at most SIPp's -timeout.
   */
  async call(o: { sip: number; did: string; tone: number; staySeconds?: number }): Promise<ToneLeg> {
    const mp = nextPorts(4);
    const capture = await new RtpCapture(mp).start();
    const sipp = carrierCallsDid({
      sip: o.sip,
      did: o.did.replace(/^\+/, ''),
      port: nextPort(),
      sink: mp,
      scenario: this.#scenario(
        o.tone,
        o.staySeconds === undefined ? 'uac-conference-tone-until-bye.xml' : 'uac-conference-tone.xml',
      ),
      extra: [...(o.staySeconds === undefined ? [] : ['-d', String(o.staySeconds * 1000)]), '-mp', String(mp)],
    });
    const leg = { tone: o.tone, capture, sipp };
    this.legs.push(leg);
    return leg;
  }

  /** Ends every caller (SIPp killed, captures stopped). */
  stop(): void {
    for (const leg of this.legs.splice(0)) {
      leg.sipp.kill();
      leg.capture.stop();
    }
  }

  remove(): void {
    this.stop();
    if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** What a leg was sent after `since` (ms since the epoch), decoded and in order. */
export function heardSince(leg: ToneLeg, since: number): Int16Array {
  const packets = leg.capture.packets().filter((p) => p.at >= since);
  const out = new Int16Array(packets.length * 160);
  packets.forEach((p, i) => out.set(p.samples.subarray(0, 160), i * 160));
  return out;
}
