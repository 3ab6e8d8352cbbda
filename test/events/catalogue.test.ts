import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  BEYOND_SPEC_EVENT_CODES,
  EVENT_CATALOGUE,
  EventCodes,
  REASON_LABELS,
  ReasonCodes,
  eventFor,
  isEventCode,
  isReasonCode,
  reasonForSipStatus,
  reasonLabel,
} from '../../events/index.js';

/** The spec's catalogue and reason table, copied here by hand from platform-api.md (Events; Errors). */
const SPEC_EVENTS = `CALL.0100 call.initiated|CALL.0180 call.ringing|CALL.0183 call.progress|CALL.0200 call.answered|
CALL.0300 call.completed|CALL.0400 call.failed|DIAL.0200 dial.answered|DIAL.0300 dial.completed|DIAL.0403 dial.blocked|
PLAY.0404 play.asset_missing|REC.0100 recording.started|REC.0300 recording.completed|TTS.0200 tts.generated|
WH.0200 webhook.delivered|WH.0400 webhook.failed|AUTH.0200 phone.authorized|AUTH.0401 phone.rejected|
BILL.0300 wallet.debited|BILL.0310 wallet.low|BILL.0402 wallet.insufficient|BILL.0403 wallet.exhausted|
BILL.0407 account.suspended|LIMIT.0429 call.concurrency_exceeded|LIMIT.0430 call.cps_exceeded|END.0403 call.no_did|
END.0488 call.cross_account|END.0410 call.callee_offline|END.0501 call.no_outbound_handler|
PLATFORM.0001 platform.concurrent|PLATFORM.0503 platform.draining|SYS.0500 system.error`;

/**
 * Codes Simu adds beyond the spec (docs/api.md, "Codes beyond the spec"), kept apart so the list above stays the
 * spec's word for word.
 */
const BEYOND_SPEC_EVENTS = `VERB.0299 verb.attribute_ignored|CALL.0210 call.redirected|ROUTE.0100 route.attempt|TRUNK.0100 trunk.state|MEDIA.0100 media.engine_state|
GATHER.0100 gather.started|GATHER.0200 gather.completed|
FWD.0100 call.forwarded|VM.0300 voicemail.left|
BILL.0311 call.credit_warning|
QUEUE.0100 queue.joined|QUEUE.0200 queue.bridged|QUEUE.0300 queue.left|STREAM.0100 stream.started|
STREAM.0300 stream.stopped|STREAM.0400 stream.failed|
CONF.0100 conference.started|CONF.0110 participant.joined|CONF.0120 participant.left|CONF.0300 conference.ended|
XFER.0200 call.transferred|XFER.0403 transfer.refused|XFER.0480 transfer.failed|
AMD.0200 call.machine_detection`;

const SPEC_REASONS = `BILL.0402 Insufficient balance|BILL.0403 Balance exhausted mid-call|BILL.0407 Account suspended|
LIMIT.0429 Concurrency cap reached|LIMIT.0430 Calls-per-second limit exceeded|END.0200 Normal hangup|
END.0404 Unallocated or inactive number|END.0408 Maximum duration reached|END.0480 No answer|END.0486 Busy|
END.0487 Canceled before answer|END.0503 Enforcement watchdog cut|END.0504 Reconciled from the switch|
END.0500 Carrier or network failure|END.0603 Rejected|END.0403 No DID to originate from|END.0488 Cross-account extension|
END.0410 Extension offline|END.0501 No outbound voice webhook|PLATFORM.0503 Platform paused for maintenance`;
/** Reason codes beyond the spec (docs/api.md, "Codes beyond the spec"). */
const BEYOND_SPEC_REASONS = `END.0422 Session timer expired: the refresher sent no refresh (RFC 4028)|
  END.0502 Media failure: the media engine was lost and the call could not be restored|
  END.0505 Cut when its node stopped|SYS.0500 Platform failure`;

const pairs = (s: string) =>
  s
    .split('|')
    .map((x) => x.trim())
    .map((x) => [x.slice(0, x.indexOf(' ')), x.slice(x.indexOf(' ') + 1)] as const);

describe('events: code catalogue', () => {
  it('holds exactly the spec event catalogue plus the listed codes beyond it, code to event name', () => {
    const spec = pairs(SPEC_EVENTS);
    const beyond = pairs(BEYOND_SPEC_EVENTS);
    assert.equal(Object.keys(EVENT_CATALOGUE).length, spec.length + beyond.length);
    for (const [code, name] of [...spec, ...beyond]) {
      assert.ok(isEventCode(code), code);
      assert.equal(eventFor(code).event, name);
    }
    assert.deepEqual([...BEYOND_SPEC_EVENT_CODES].sort(), beyond.map(([code]) => code).sort());
    for (const [code] of spec) assert.ok(!BEYOND_SPEC_EVENT_CODES.has(code as never), `${code} is the spec's`);
    assert.equal(
      new Set(Object.values(EventCodes)).size,
      spec.length + beyond.length,
      'every code has exactly one named constant',
    );
  });

  it('holds exactly the spec terminal reason codes with their outcome labels', () => {
    const spec = [...pairs(SPEC_REASONS), ...pairs(BEYOND_SPEC_REASONS)];
    assert.equal(Object.keys(REASON_LABELS).length, spec.length);
    for (const [code, label] of spec) {
      assert.ok(isReasonCode(code), code);
      assert.equal(reasonLabel(code), label);
    }
    assert.equal(new Set(Object.values(ReasonCodes)).size, spec.length);
    assert.ok(!isReasonCode('CALL.0300') && !isEventCode('END.0200'));
  });

  it('maps final SIP statuses to reason codes', () => {
    const cases: Array<[number, string]> = [
      [200, 'END.0200'],
      [486, 'END.0486'],
      [600, 'END.0486'],
      [480, 'END.0480'],
      [408, 'END.0480'],
      [487, 'END.0487'],
      [404, 'END.0404'],
      [604, 'END.0404'],
      [500, 'END.0500'],
      [503, 'END.0500'],
      [502, 'END.0500'],
      [603, 'END.0603'],
    ];
    for (const [status, code] of cases) assert.equal(reasonForSipStatus(status), code, String(status));
  });

  it('no code string is spelled outside events/catalogue.ts (project source, tests excluded)', () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const n of readdirSync(dir)) {
        if (['node_modules', 'test', 'data', 'docs', '.git', 'bench'].includes(n)) continue;
        const p = path.join(dir, n);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts') && !p.endsWith(path.join('events', 'catalogue.ts'))) {
          if (
            /['"`](CALL|DIAL|PLAY|REC|TTS|WH|AUTH|BILL|LIMIT|END|PLATFORM|SYS|VERB)\.\d{4}['"`]/.test(
              readFileSync(p, 'utf8'),
            )
          )
            offenders.push(path.relative(root, p));
        }
      }
    };
    walk(root);
    assert.deepEqual(offenders, []);
  });
});
