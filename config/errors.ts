/** A setting whose value does not have the expected form; start-up stops with this message. */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(
    readonly key: string,
    readonly source: string,
    readonly value: string,
    readonly expected: string,
  ) {
    super(`config: ${key} (${source}) = ${JSON.stringify(value)} is not valid: expected ${expected}`);
    this.name = 'ConfigError';
  }
}
