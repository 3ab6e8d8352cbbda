/**
 * What the API asks of live conferences (api/routes/conferences.ts). Declared in the calls room, below the API,
 * and implemented by Conferences (conferences.ts). Conferences live in this process's memory: the list holds the
 * conferences going on now, not past ones (their participants' calls, events and recordings are stored).
 */
export interface ConferenceView {
  readonly sid: string;
  readonly name: string;
  /** `waiting`: nobody with startConferenceOnEnter has joined yet; `in-progress`: mixing. */
  readonly status: 'waiting' | 'in-progress';
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly participantCount: number;
  readonly recording: boolean;
}

export interface ParticipantView {
  readonly callSid: string;
  readonly callUuid: string;
  readonly muted: boolean;
  readonly hold: boolean;
  /** Still waiting for the conference to start (hears the wait audio). */
  readonly waiting: boolean;
  readonly startConferenceOnEnter: boolean;
  readonly endConferenceOnExit: boolean;
  readonly joinedAt: string;
}

/** A value, or its promise: the API's view of rooms on other nodes is asynchronous (calls/node-routing.ts). */
export type MaybeAsync<T> = T | Promise<T>;

export interface ConferenceControl {
  list(accountId: string): MaybeAsync<ConferenceView[]>;
  find(accountId: string, sid: string): MaybeAsync<ConferenceView | undefined>;
  /** undefined: no such conference of the account. */
  participants(accountId: string, sid: string): MaybeAsync<ParticipantView[] | undefined>;
  /** Mute/unmute, hold/unhold one participant; undefined: no such conference or participant. */
  update(
    accountId: string,
    sid: string,
    callSid: string,
    change: { muted?: boolean; hold?: boolean },
  ): MaybeAsync<ParticipantView | undefined>;
  /** Removes a participant (its Dial ends and its document goes on); false: no such conference or participant. */
  kick(accountId: string, sid: string, callSid: string): MaybeAsync<boolean>;
}
