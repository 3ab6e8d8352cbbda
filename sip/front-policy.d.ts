import type { NewInvitePolicy } from './stack/index.js';

/** The data of the UDP front's policy (front-policy.js): exempt users and the platform cap in shared memory. */
export interface FrontPolicyData {
  exempt: string[];
  cap: SharedArrayBuffer;
}

export declare function frontPolicyData(emergencyNumbers: Iterable<string>): FrontPolicyData;
export declare function setFrontCap(data: FrontPolicyData, cps: number): void;
export declare function createPolicy(data: FrontPolicyData): NewInvitePolicy;

/** The URL of front-policy.js, for the front's worker thread to import it. */
export declare const FRONT_POLICY_MODULE: string;
