/**
 * Run inside a private network namespace by balance-baresip.test.ts (baresip will not start on `lo` alone,
 * test/support/netns-peer.ts): the whole switch and baresip as a registered phone of the account, which
 * dials the balance short code *100# twice: with 1,200.50 KES (English) and with nothing left (Swahili). baresip's
 * sndfile module writes what it heard (dump-*-dec.wav); the peer reports the seconds of speech in it, what the
 * switch's own sentence lasts, the CDRs and the ledger. Prints one JSON line.
 */
import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EspeakTtsEngine, SpeechRecognizer, notice, readWav } from '../../../media/index.js';
import { createAccountWithDid, speechSecondsOf, startTestSwitch } from '../support/harness.js';
import { baresipDials, lastEndedCall, phoneUser } from '../support/baresip.js';

const DID = '+254700000452';
const ctx = await startTestSwitch();
const acct = await createAccountWithDid(ctx.db, DID);
const user = await phoneUser(ctx, acct, 'balance@example.com');
const domain = `${acct.id}.sip.simu.test`;
const work = mkdtempSync(path.join(os.tmpdir(), 'simu-balance-baresip-'));
const tts = new EspeakTtsEngine({ cacheDir: path.join(work, 'tts') });

/** baresip registers, dials *100# and quits after `seconds`; returns its log and the speech it heard. */
async function dialBalance(
  seconds: number,
): Promise<{ log: string; heardSeconds: number; recognised: { transcript: string; confidence: number } | null }> {
  const phone = { ...user, domain, switchPort: ctx.ports.sip };
  const heardDir = `${work}/heard-${seconds}`;
  const { log, dir } = await baresipDials({
    work,
    name: 'phone',
    phone,
    dial: `sip:*100%23@${domain}`,
    seconds,
    records: heardDir,
  });
  const heard = readdirSync(heardDir).find((f) => f.endsWith('-dec.wav'));
  if (!heard) return { log: `${dir}\n${log.slice(-2000)}`, heardSeconds: -1, recognised: null };
  const audio = await readWav(path.join(heardDir, heard));
  // The project's speech Gather engine (media/speech) on what the phone heard, choosing among sentences the
  // switch says; only the English one is in its model (pocketsphinx en-us).
  const rec = await SpeechRecognizer.open({
    hints: ['your balance is', 'talk time left', 'cannot place outside calls', 'thank you goodbye'],
    maxSeconds: 15,
  });
  rec.push(audio.samples, audio.sampleRate === 16000 ? 16000 : 8000);
  rec.end();
  const recognised = await rec.result;
  return { log: `${dir}\n${log.slice(-2000)}`, heardSeconds: speechSecondsOf(audio.samples), recognised };
}

const lastCall = () => lastEndedCall(ctx.db, acct.id);

/** Seconds of speech in the switch's own sentence (what a phone that heard all of it would count). */
async function sentenceSeconds(n: { text: string; language: string }): Promise<number> {
  const r = await tts.synthesize({ text: n.text, language: n.language });
  return speechSecondsOf((await readWav(r.path)).samples);
}

const report: Record<string, unknown> = {};
await ctx.db('accounts').where({ id: acct.id }).update({ balance_cents: 120050 });
mkdirSync(`${work}/heard-12`);
const rich = await dialBalance(12);
const richCall = await lastCall();
report.rich = {
  ...rich,
  expectedSeconds: await sentenceSeconds(notice('balance', 'en', { cents: 120050 })),
  cdr: richCall,
  ledger: (await ctx.db('wallet_transactions').where({ call_id: richCall?.id ?? '' })).length,
  balanceAfter: (await ctx.db('accounts').where({ id: acct.id }).first()).balance_cents,
};

await ctx.db('accounts').where({ id: acct.id }).update({ balance_cents: 0, language: 'sw' });
mkdirSync(`${work}/heard-10`);
const broke = await dialBalance(10);
const brokeCall = await lastCall();
report.broke = {
  ...broke,
  expectedSeconds: await sentenceSeconds(notice('balance', 'sw', { cents: 0 })),
  cdr: brokeCall,
  ledger: (await ctx.db('wallet_transactions').where({ call_id: brokeCall?.id ?? '' })).length,
};
console.log(JSON.stringify(report));
await ctx.sw.stop();
process.exit(0);
