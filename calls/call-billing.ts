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
  callEnded(callId: string, endedAt: Date): Promise<{ costCents: number; talkSeconds: number }>;
}
