import { addOperator, otpauthUri, PortalUserError } from '../../api/index.js';
import { insertAudit, listAudit } from '../../store/index.js';
import { Flags, UsageError } from '../args.js';
import { cliActor, type CommandGroup } from '../command.js';

/** Operators of the platform: the people who sign in to /console/, and the audit log of their actions. */
export const operatorCommands: CommandGroup = {
  noun: 'operator',
  help: `  operator add --email E --password P             a /console/ sign-in; prints the otpauth:// URI (once)
  operator audit [--limit N]                      operator actions, newest first (console and CLI)`,
  commands: {
    async 'operator add'(db, args, out) {
      const f = new Flags(args);
      const email = f.string('email', { required: true })!;
      const password = f.string('password', { required: true })!;
      f.done();
      try {
        const op = await addOperator(db, email, password);
        await insertAudit(db, { actor: cliActor(), action: 'operator.add', target: op.email });
        const uri = otpauthUri(op.totp_secret, op.email);
        out.print(`operator ${op.email} added\nAdd this to an authenticator app (shown once): ${uri}`, {
          uuid: op.id,
          email: op.email,
          otpauth_uri: uri,
          totp_secret: op.totp_secret,
        });
      } catch (e) {
        if (e instanceof PortalUserError) throw new UsageError(e.message);
        throw e;
      }
    },
    async 'operator audit'(db, args, out) {
      const f = new Flags(args);
      const limit = f.int('limit', { min: 1, max: 500 }) ?? 50;
      f.done();
      const rows = await listAudit(db, { limit });
      out.print(
        rows
          .map((r) => `${r.at}  ${r.actor.padEnd(28)} ${r.action.padEnd(16)} ${r.target}${r.ok ? '' : '  REFUSED'}`)
          .join('\n') || '(no operator actions yet)',
        rows,
      );
    },
  },
};
