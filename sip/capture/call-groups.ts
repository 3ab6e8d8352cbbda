/**
 * Which SIP Call-IDs are the legs of one call, and which call ids (uuid and sid) name it. A group opens with an
 * out-of-dialog INVITE received, or with a call claimed with no leg yet (a call the API places); an out-of-dialog
 * INVITE sent while handling a group's messages (sip-capture.ts) joins it, so a call's B legs are found with its A
 * leg. A Call-ID is forgotten `maxIdleMs` after its last message, and the oldest beyond `maxCallIds`.
 */
export interface CallGroup {
  readonly callIds: Set<string>;
  /** The call's ids as claimed, the first call's first: [uuid, sid, child uuid, child sid, ...]. */
  readonly ids: string[];
  /** The sid of the first call claimed: the correlation id of the group's HEP packets. */
  sid: string | undefined;
}

interface Entry {
  group: CallGroup;
  lastAt: number;
}

export class CallGroups {
  /** By Call-ID, least recently seen first (an entry seen again moves to the end). */
  readonly #byCallId = new Map<string, Entry>();
  readonly #byId = new Map<string, CallGroup>();
  readonly #maxIdleMs: number;
  readonly #maxCallIds: number;

  constructor(opts: { maxIdleMs: number; maxCallIds: number }) {
    this.#maxIdleMs = opts.maxIdleMs;
    this.#maxCallIds = opts.maxCallIds;
  }

  /** The group of a Call-ID, noting it was seen at `at`. */
  seen(callId: string, at: number): CallGroup | undefined {
    const e = this.#byCallId.get(callId);
    if (!e) return undefined;
    e.lastAt = at;
    this.#byCallId.delete(callId);
    this.#byCallId.set(callId, e);
    return e.group;
  }

  /** Adds a Call-ID to `group`, or to a new group. */
  add(callId: string, at: number, group: CallGroup = { callIds: new Set(), ids: [], sid: undefined }): CallGroup {
    group.callIds.add(callId);
    this.#byCallId.set(callId, { group, lastAt: at });
    this.#expire(at);
    return group;
  }

  /** Names the call a group carries (a call's uuid and sid; a child leg's too). */
  claim(group: CallGroup, id: string, sid: string): void {
    for (const k of [id, sid]) {
      if (this.#byId.has(k)) continue;
      group.ids.push(k);
      this.#byId.set(k, group);
    }
    group.sid ??= sid;
  }

  /** The group of a call, by its uuid or sid. */
  ofCall(id: string): CallGroup | undefined {
    return this.#byId.get(id);
  }

  get size(): number {
    return this.#byCallId.size;
  }

  #expire(now: number): void {
    const cutoff = now - this.#maxIdleMs;
    for (const [callId, e] of this.#byCallId) {
      if (e.lastAt >= cutoff && this.#byCallId.size <= this.#maxCallIds) break;
      this.#byCallId.delete(callId);
      e.group.callIds.delete(callId);
      if (e.group.callIds.size === 0) for (const id of e.group.ids) this.#byId.delete(id);
    }
  }
}
