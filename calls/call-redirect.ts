import {
  Interpreter,
  type InterpreterEnd,
  type InterpreterOptions,
  type InterpreterStart,
  type VerbContext,
} from '../verbs/index.js';

/**
 * A call's verbs, movable while they run: REST call control (POST /api/calls/{uuid}/update, docs/api.md) hands a
 * new start (a URL to fetch now, or an inline document) and the running verb is interrupted at once, as Twilio's
 * call update does: a Say, Play, Pause or Record stops (their verb's kill aborts the media), a bridged Dial hangs
 * up its dialled leg and the caller goes back to the IVR (calls/flows/dial-verb.ts), then the new document runs
 * in a fresh interpreter. The verbs after the interrupted one never run.
 *
 * Before the verbs start (an originated call still ringing) a redirect replaces where the first document comes
 * from. After stop() (the call is ending) nothing is redirected any more.
 */
export class RedirectableVerbs {
  readonly #ctx: VerbContext;
  readonly #options: () => InterpreterOptions;
  #interpreter: Interpreter | undefined;
  #pending: InterpreterStart | undefined;
  #started = false;
  #stopped = false;

  /** `options` is read for each interpreter (the verb registry a test swaps is seen by the next document). */
  constructor(ctx: VerbContext, options: () => InterpreterOptions = () => ({})) {
    this.#ctx = ctx;
    this.#options = options;
  }

  /** Runs `start` (or a redirect asked before it) and every redirect after, until an end that is not a redirect. */
  async run(start: InterpreterStart): Promise<InterpreterEnd> {
    this.#started = true;
    let next = this.#take() ?? start;
    for (;;) {
      const interpreter = new Interpreter(this.#ctx, this.#options());
      this.#interpreter = interpreter;
      const end = await interpreter.run(next);
      const redirect = this.#take();
      if (end.reason !== 'killed' || redirect === undefined || this.#stopped) return end;
      next = redirect;
    }
  }

  /** Moves the verbs to `start` now; false once the verbs are stopped (the call is ending). */
  redirect(start: InterpreterStart): boolean {
    if (this.#stopped) return false;
    this.#pending = start;
    if (this.#started) this.#interpreter?.kill();
    return true;
  }

  /** The call is ending: the running verb is killed and no redirect runs any more. Safe twice. */
  stop(): void {
    this.#stopped = true;
    this.#pending = undefined;
    this.#interpreter?.kill();
  }

  #take(): InterpreterStart | undefined {
    const p = this.#pending;
    this.#pending = undefined;
    return p;
  }
}
