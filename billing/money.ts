/**
 * Money is integer minor units (cents of KES) inside the switch and a string with two decimals at the edges
 * (API, CLI). Never a float: "12.30" is parsed digit by digit.
 */
export const CURRENCY = 'KES';

export class MoneyFormatError extends Error {
  readonly code = 'MONEY_INVALID';
  constructor(readonly value: string) {
    super(`${JSON.stringify(value)} is not an amount: expected digits with at most two decimals, e.g. 100.00`);
    this.name = 'MoneyFormatError';
  }
}

export function parseMoney(value: string): number {
  const m = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(value.trim());
  if (!m) throw new MoneyFormatError(value);
  return Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
}

export function formatMoney(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(cents));
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}
