import { randomUUID, randomBytes, createHash } from 'node:crypto';

export const newId = (): string => randomUUID();
export const nowIso = (d: Date = new Date()): string => d.toISOString();
export const sha256Hex = (s: string): string => createHash('sha256').update(s).digest('hex');
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');
/** Call sids: `call_` plus 24 hex characters. */
export const newCallSid = (): string => `call_${randomBytes(12).toString('hex')}`;
