/** Errors of the security room carry a stable `code` (STYLE.md, point 3). */
export class SecurityError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'SecurityError';
  }
}

/** A setting is out of range (caught at start-up, before any traffic is judged with it). */
export class SecuritySettingError extends SecurityError {
  constructor(message: string) {
    super(message, 'SECURITY_BAD_SETTING');
    this.name = 'SecuritySettingError';
  }
}

/** The address given to `addBan`/`liftBan` is not an IP address. */
export class BadAddressError extends SecurityError {
  constructor(address: string) {
    super(`not an IP address: ${JSON.stringify(address)}`, 'SECURITY_BAD_ADDRESS');
    this.name = 'BadAddressError';
  }
}
