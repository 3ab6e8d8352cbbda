/** Billing as a live call sees it (billing/CreditMonitor); absent in set-ups without credit control. */
export interface CallBilling {
  callAnswered(a: {
    callId: string;
    accountId: string;
    direction: 'inbound' | 'outbound' | 'internal';
    to: string;
    answeredAt: Date;
  }): Promise<void>;
  ttsUsed(callId: string, seconds: number, tier?: string): void;
  /** Settles the call; its CDR's talk time is not taken from here but from the same instants (cdrSeconds). */
  callEnded(callId: string, endedAt: Date): Promise<{ costCents: number }>;
}
