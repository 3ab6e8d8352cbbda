import { z } from 'zod';
import type { EndUserRow } from '../store/index.js';
import { AssetName } from './asset-schemas.js';

/**
 * The call-handling fields of the EndUser object, beyond the spec (docs/api.md,
 * "Call handling and voicemail"): in every EndUser the API returns, and changeable through /api/users/update.
 */
const ForwardTarget = z
  .string()
  .regex(/^(\d{2,6}|\+[1-9]\d{6,14})$/, 'expected an extension (2 to 6 digits) or an E.164 number (+2547...)')
  .describe('An extension of the account or an E.164 number; null clears it');

export const CallHandlingOut = z.object({
  dnd: z.boolean().describe('Do not disturb: no phone rings (forward on busy, else voicemail, else busy)'),
  forward_always: ForwardTarget.nullable(),
  forward_busy: ForwardTarget.nullable(),
  forward_no_answer: ForwardTarget.nullable(),
  no_answer_seconds: z.number().int().describe('Ring time before no-answer forwarding or voicemail'),
  voicemail_enabled: z.boolean(),
  voicemail_greeting_asset: z.string().nullable().describe('Asset played as the greeting; null: a spoken default'),
});

/** Only the fields supplied change; null clears a forward target or the greeting. */
export const CallHandlingUpdate = z.object({
  dnd: z.boolean().optional(),
  forward_always: ForwardTarget.nullable().optional(),
  forward_busy: ForwardTarget.nullable().optional(),
  forward_no_answer: ForwardTarget.nullable().optional(),
  no_answer_seconds: z.number().int().min(5).max(120).optional(),
  voicemail_enabled: z.boolean().optional(),
  voicemail_greeting_asset: AssetName.nullable().optional(),
});

export const callHandlingOut = (u: EndUserRow): z.infer<typeof CallHandlingOut> => ({
  dnd: u.dnd,
  forward_always: u.forward_always,
  forward_busy: u.forward_busy,
  forward_no_answer: u.forward_no_answer,
  no_answer_seconds: u.no_answer_seconds,
  voicemail_enabled: u.voicemail_enabled,
  voicemail_greeting_asset: u.voicemail_greeting,
});

/** The store patch of an update body's call-handling fields (absent ones are left out). */
export function callHandlingPatch(b: z.infer<typeof CallHandlingUpdate>) {
  const patch: Partial<Omit<z.infer<typeof CallHandlingOut>, 'voicemail_greeting_asset'>> & {
    voicemail_greeting?: string | null;
  } = {};
  if (b.dnd !== undefined) patch.dnd = b.dnd;
  if (b.forward_always !== undefined) patch.forward_always = b.forward_always;
  if (b.forward_busy !== undefined) patch.forward_busy = b.forward_busy;
  if (b.forward_no_answer !== undefined) patch.forward_no_answer = b.forward_no_answer;
  if (b.no_answer_seconds !== undefined) patch.no_answer_seconds = b.no_answer_seconds;
  if (b.voicemail_enabled !== undefined) patch.voicemail_enabled = b.voicemail_enabled;
  if (b.voicemail_greeting_asset !== undefined) patch.voicemail_greeting = b.voicemail_greeting_asset;
  return patch;
}
