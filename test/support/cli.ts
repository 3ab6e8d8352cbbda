import { Writable } from 'node:stream';
import { runCli } from '../../cli/index.js';

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return { stream, text: () => text };
}

/** Runs the operator CLI in this process (config from process.env) and captures what it prints. */
export async function simu(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = capture();
  const err = capture();
  const code = await runCli(argv, { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
}
