/**
 * Identifiers: branches carry the RFC 3261 magic cookie (§8.1.1.7); tags and Call-IDs are random enough to be
 * globally unique (§19.3) without a syscall per message: a random per-process prefix and a counter.
 */
import { randomBytes } from 'node:crypto';
import { RandomPool } from '../../../kit/index.js';
import { BRANCH_COOKIE } from '../message/index.js';

const prefix = randomBytes(6).toString('base64url').replace(/[-_]/g, 'x');
let counter = 0;

function next(): string {
  return prefix + (++counter).toString(36);
}

export function newBranch(): string {
  return `${BRANCH_COOKIE}${next()}`;
}

export function newTag(): string {
  return next() + Math.floor(Math.random() * 0xffff).toString(36);
}

/** Random bytes drawn in blocks: one syscall per 512 Call-IDs instead of one each. */
const random = new RandomPool(2048);

export function newCallId(host: string): string {
  return `${next()}${random.hex(4)}@${host}`;
}
