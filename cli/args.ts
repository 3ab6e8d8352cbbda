/** A small, strict argument reader: unknown flags and missing values are usage errors (exit code 2). */
export class UsageError extends Error {
  readonly code = 'CLI_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface ParsedArgs {
  positional: string[];
  flags: Map<string, string | true>;
}

export function parseArgs(argv: string[], booleanFlags: readonly string[] = ['json']): ParsedArgs {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (booleanFlags.includes(name)) {
        flags.set(name, true);
        continue;
      }
      const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else {
      positional.push(a);
    }
  }
  return { positional, flags };
}

export class Flags {
  private readonly used = new Set<string>();
  constructor(private readonly parsed: ParsedArgs) {}

  string(name: string, opts: { required?: boolean; default?: string } = {}): string | undefined {
    this.used.add(name);
    const v = this.parsed.flags.get(name);
    if (v === undefined) {
      if (opts.required) throw new UsageError(`--${name} is required`);
      return opts.default;
    }
    if (v === true) throw new UsageError(`--${name} needs a value`);
    return v;
  }

  int(name: string, opts: { required?: boolean; min?: number; max?: number } = {}): number | undefined {
    const v = this.string(name, opts);
    if (v === undefined) return undefined;
    const min = opts.min ?? 0;
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(v)}`);
    }
    return Number(v);
  }

  bool(name: string): boolean {
    this.used.add(name);
    return this.parsed.flags.get(name) === true;
  }

  /** Refuses flags the command does not know, so a typo never silently does something else. */
  done(): void {
    for (const k of this.parsed.flags.keys()) {
      if (!this.used.has(k)) throw new UsageError(`unknown option --${k}`);
    }
  }
}
