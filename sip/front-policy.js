// @ts-check
/**
 * The platform's rules for new INVITEs at the SIP UDP front (sip/stack/transport/udp-front.ts): an emergency number
 * is never refused, and the platform-wide cap on new calls per second (overload.platformMaxCps) holds over the last
 * second. Plain JavaScript with its types in front-policy.d.ts: the front's worker thread, which runs without the
 * TypeScript loader, loads it by its URL (`FRONT_POLICY_MODULE`) and calls `createPolicy` with the data the main
 * thread built (`frontPolicyData`).
 */

/**
 * The policy's data, passed to the worker: the exempt Request-URI users and the cap, in shared memory so the main
 * thread may change it (setFrontCap).
 * @param {Iterable<string>} emergencyNumbers
 */
export function frontPolicyData(emergencyNumbers) {
  return { exempt: [...emergencyNumbers], cap: new SharedArrayBuffer(4) };
}

/**
 * Sets the platform cap in calls/s (0: none).
 * @param {{ cap: SharedArrayBuffer }} data
 * @param {number} cps
 */
export function setFrontCap(data, cps) {
  Atomics.store(new Int32Array(data.cap), 0, cps);
}

/**
 * The policy the worker asks (times are the worker's performance.now(), ms).
 * @param {{ exempt: string[], cap: SharedArrayBuffer }} data
 */
export function createPolicy(data) {
  const exempt = new Set(data.exempt);
  const cap = new Int32Array(data.cap);
  /** @type {number[]} Admission times within the last second, for the platform cap. */
  const recent = [];
  return {
    /** @param {string} user the Request-URI's user part; separators are ignored */
    exempt: (user) => exempt.has(user.replace(/[\s\-.()/]/g, '')),
    /** @param {number} now */
    admit(now) {
      while (recent.length > 0 && recent[0] <= now - 1000) recent.shift();
      const c = Atomics.load(cap, 0);
      return !(c > 0 && recent.length >= c);
    },
    /** @param {number} now */
    admitted(now) {
      if (Atomics.load(cap, 0) > 0) recent.push(now);
    },
  };
}

/** The URL of this module, for the front's worker thread to import it. */
export const FRONT_POLICY_MODULE = import.meta.url;
