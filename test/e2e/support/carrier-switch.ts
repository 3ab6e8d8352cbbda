import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort, nextPorts } from '../../support/ports.js';
import {
  AccountServer,
  RtpSink,
  SCENARIOS,
  addCarrier,
  api,
  allocateSwitchPorts,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
  type SippRun,
  type SwitchPorts,
  type TestAccount,
} from './harness.js';

export interface CarrierSwitchOptions {
  /** The account's DID, the one the carrier calls. */
  did: string;
  /** Columns of the account set once it exists (e.g. fallback_mode). */
  account?: Record<string, string | number | null>;
  /** The account's status webhook is the AccountServer's /status (default); false leaves it unset. */
  statusWebhook?: boolean;
  /** Extra settings of the switch (SIMU_* variables). */
  env?: Record<string, string>;
}

/**
 * What most e2e suites of carrier calls share: a test switch on ports of this run's block, an account with a DID
 * and money, its webhook server, a carrier trunk (SIPp at `callerPort` sends from 127.0.0.1; Dial legs go to
 * `carrierPort`), a fresh RTP sink per test at `sinkPort` and the test's SIPp (`sipp`), killed after each test.
 * `ctx` and `acct` are set by the suite's `before` hook; `sink` by each `beforeEach`.
 */
export class CarrierSwitch {
  readonly ports: SwitchPorts = allocateSwitchPorts();
  /**
   * Where a carrier's media is aimed (the RtpSink); the port above it is held too, since rtpengine sends the RTCP
   * of that stream there (else it lands on whatever the block hands out next, e.g. a silent carrier's socket).
   */
  readonly sinkPort = nextPorts(2);
  /** Where the carrier takes outbound legs (Dial). */
  readonly carrierPort = nextPort();
  /** SIPp delivering inbound calls. */
  readonly callerPort = nextPort();
  readonly server = new AccountServer();
  ctx!: Awaited<ReturnType<typeof startTestSwitch>>;
  acct!: TestAccount;
  sink!: RtpSink;
  /** The test's SIPp, killed after it. */
  sipp: SippRun | undefined;
  #scenarios: string | undefined;

  constructor(readonly options: CarrierSwitchOptions) {}

  get did(): string {
    return this.options.did;
  }

  async setInboundUrl(url: string): Promise<void> {
    await this.ctx.db('numbers').where({ number: this.did }).update({ webhook_voice_inbound: url });
  }

  /** The carrier (SIPp at `callerPort`) calls `did` (the account's by default) with one of test/e2e/support/scenarios. */
  carrierCalls(scenario = 'uac-inbound.xml', did = this.did.slice(1), extra: string[] = []): SippRun {
    return carrierCallsDid({ sip: this.ports.sip, did, port: this.callerPort, sink: this.sinkPort, scenario, extra });
  }

  /**
   * The carrier calls the account's DID and must hear 180, then exactly `status` (a 200 fails it:
   * scenarios/uac-inbound-refused.xml); without a status the call is answered and hung up as uac-inbound.xml does.
   */
  carrierCallsExpecting(status?: number): SippRun {
    if (status === undefined) return this.carrierCalls();
    this.#scenarios ??= mkdtempSync(path.join(os.tmpdir(), 'simu-refused-'));
    const scenario = path.join(this.#scenarios, `uac-inbound-refused-${status}.xml`);
    const template = readFileSync(path.join(SCENARIOS, 'uac-inbound-refused.xml'), 'utf8');
    writeFileSync(scenario, template.replace('response="EXPECTED_STATUS"', `response="${status}"`));
    return this.carrierCalls(scenario);
  }

  /** The account's newest call as GET /api/calls shows it, once it has ended (or as it is after 10 s). */
  async lastCall() {
    const deadline = Date.now() + 10000;
    for (;;) {
      const call = (await api(this.ctx.baseUrl, this.acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      if (call?.ended_at || Date.now() > deadline) return call;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The codes of a call's stored events. */
  async eventCodes(callId: string): Promise<string[]> {
    return (await this.ctx.db('call_events').where({ call_id: callId })).map((e: { code: string }) => e.code);
  }

  async start(): Promise<void> {
    this.ctx = await startTestSwitch({ ...this.ports, env: this.options.env });
    await this.server.listen();
    this.acct = await createAccountWithDid(this.ctx.db, this.did);
    const columns = {
      ...(this.options.statusWebhook === false ? {} : { webhook_status: this.server.url('/status') }),
      ...this.options.account,
    };
    if (Object.keys(columns).length) await this.ctx.db('accounts').where({ id: this.acct.id }).update(columns);
    await addCarrier(this.ctx.db, this.carrierPort, 'carrier', this.ctx.sw); // the running edge sees it at once
  }

  async stop(): Promise<void> {
    await this.server.close();
    await this.ctx?.sw.stop();
  }
}

/** Registers the suite's hooks (call inside `describe`) and returns the context they fill in. */
export function useCarrierSwitch(options: CarrierSwitchOptions): CarrierSwitch {
  const t = new CarrierSwitch(options);
  before(() => t.start());
  beforeEach(async () => {
    t.sink = await new RtpSink().bind(t.sinkPort);
  });
  afterEach(() => {
    t.sipp?.kill();
    t.sink.close();
  });
  after(() => t.stop());
  return t;
}
