/** Conferences: <Dial><Conference>, the N-1 mix on the media room's mixer, REST control. */
export { Conferences, type ConferencesDeps } from './conferences.js';
export { joinConference } from './join.js';
export { conferenceCallOf } from './live-participant.js';
export type { ConferenceControl, ConferenceView, ParticipantView } from './conference-control.js';
export type { ConferenceCall, ParticipantPort } from './conference-room.js';
export { dialConference, serveConferenceLeg, type NodeLegDeps } from './node-leg.js';
