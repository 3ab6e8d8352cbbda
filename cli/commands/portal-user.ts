import { addPortalUser, otpauthUri, PortalUserError } from '../../api/index.js';
import { Flags, UsageError } from '../args.js';
import { account as findAccountOrFail, type Command, type CommandGroup } from '../command.js';

/** `simu portal-user add ACCOUNT_ID --email E --password P`: prints the otpauth:// URI for an authenticator app. */
const portalUserAdd: Command = async (db, args, out) => {
  const f = new Flags(args);
  const email = f.string('email', { required: true })!;
  const password = f.string('password', { required: true })!;
  f.done();
  const account = await findAccountOrFail(db, args.positional[0]);
  try {
    const u = await addPortalUser(db, account.id, email, password);
    const uri = otpauthUri(u.totp_secret, u.email);
    out.print(
      `portal user ${u.email} added to account ${account.id}\n` +
        `Add this to an authenticator app (shown once): ${uri}`,
      { uuid: u.id, account: account.id, email: u.email, otpauth_uri: uri, totp_secret: u.totp_secret },
    );
  } catch (e) {
    if (e instanceof PortalUserError) throw new UsageError(e.message);
    throw e;
  }
};

/** Web portal sign-ins (api/ holds the scrypt password and TOTP logic). */
export const portalUserCommands: CommandGroup = {
  noun: 'portal-user',
  help: '  portal-user add ID --email E --password P      a web portal sign-in; prints the otpauth:// URI (once)',
  commands: { 'portal-user add': portalUserAdd },
};
