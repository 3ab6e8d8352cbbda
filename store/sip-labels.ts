/**
 * The form of an account's SIP domain label (store/sip-domains.ts), pure: imports nothing, so migration 019 can use
 * it without pulling the store in.
 */
/** At most 63 characters (one DNS label), lowercase letters, digits and inner hyphens, beginning with a letter. */
const LABEL_RE = /^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Derived labels are kept short enough for a `-NNN` suffix. */
const DERIVED_MAX = 40;

/**
 * Whether `label` may be an account's SIP domain label: a valid RFC 3261 toplabel (it begins with a letter, so the
 * bare label is a valid host too) that cannot be mistaken for an account uuid.
 */
export function isValidSipLabel(label: string): boolean {
  return LABEL_RE.test(label) && !label.includes('--') && !UUID_RE.test(label);
}

/** A label derived from an account name: `Acme Ltd.` -> `acme-ltd`, `Café 21` -> `cafe-21`, `42` -> `a-42`. */
export function sipLabelOf(name: string): string {
  let s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (!/^[a-z]/.test(s)) s = s ? `a-${s}` : 'account';
  s = s.slice(0, DERIVED_MAX).replace(/-+$/, '');
  return isValidSipLabel(s) ? s : 'account';
}
