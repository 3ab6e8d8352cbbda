export { Portal, SESSION_COOKIE, type PortalDeps } from './server.js';
export { totp, hotp, verifyTotp, otpauthUri, base32Encode, base32Decode, newTotpSecret } from './totp.js';
export { addPortalUser, findPortalUserByEmail, PortalUserError, type PortalUserRow } from './users.js';
