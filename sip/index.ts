export {
  SipApplication,
  type InviteOrigin,
  type InviteHandler,
  type EndUserIdentity,
  type EndUserAuthenticator,
} from './sip-app.js';
export { TrunkDirectory, addressMatches, type TrunkRoute } from './trunks.js';
