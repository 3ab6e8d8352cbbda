import { addPortalUser, otpauthUri, PortalUserError } from '../api/index.js';
import { registerCommand } from './commands.js';
import { Flags, UsageError } from './args.js';
import { findAccount } from '../store/index.js';

/** `simu portal-user add ACCOUNT_ID --email E --password P`: prints the otpauth:// URI for an authenticator app. */
registerCommand('portal-user add', async (db, args, out) => {
  const f = new Flags(args);
  const email = f.string('email', { required: true })!;
  const password = f.string('password', { required: true })!;
  f.done();
  const id = args.positional[0];
  if (!id) throw new UsageError('an account id is required');
  const account = await findAccount(db, id);
  if (!account) throw new UsageError(`no account with id ${id}`);
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
});
