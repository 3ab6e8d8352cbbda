/**
 * <Dial><Conference>name</Conference></Dial>, TwiML's conference noun: parsed by
 * parse-conference.ts, run by the calls room (calls/conference/).
 */

/** Longest conference name (TwiML's friendly names are at most 64 characters, like queue names). */
export const MAX_CONFERENCE_NAME = 64;
/** Most participants one conference may hold (TwiML's limit); also the default of maxParticipants. */
export const MAX_CONFERENCE_PARTICIPANTS = 250;

export type ConferenceRecordMode = 'do-not-record' | 'record-from-start';

export interface ConferenceNoun {
  /** The room's name; one namespace per account. */
  readonly name: string;
  /** This participant starts the conference when it joins (default true); until then everyone waits. */
  readonly startConferenceOnEnter: boolean;
  /** The conference ends for everyone when this participant leaves (default false). */
  readonly endConferenceOnExit: boolean;
  /** Joins muted: hears the others, is not heard. */
  readonly muted: boolean;
  /** A tone when someone joins, leaves, both (`true`, the default) or neither. */
  readonly beepOnEnter: boolean;
  readonly beepOnExit: boolean;
  /** Audio (an http(s) URL of a sound file) played in a loop while waiting for the conference to start or on hold. */
  readonly waitUrl?: string;
  /** The conference refuses a participant beyond this many (2 to 250, default 250). */
  readonly maxParticipants: number;
  /** `record-from-start`: the mix of the whole conference is recorded, stored as a recording of this call. */
  readonly record: ConferenceRecordMode;
}
