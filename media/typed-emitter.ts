/**
 * The media room's classes extend the kit's one typed emitter (kit/typed-emitter.ts: a throwing listener is
 * logged, not swallowed); this name stays for the files that still import it from here.
 */
export { TypedEmitter } from '../kit/index.js';
