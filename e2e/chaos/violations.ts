/** What the checker found wrong in a run, by kind (checker.ts, money-checks.ts). */
export type ViolationKind =
  | 'duplicate_payment'
  | 'double_charge'
  | 'wrong_amount'
  | 'charge_without_payment'
  | 'missing_payment'
  | 'not_terminal'
  | 'charged_after_refusals'
  | 'shown_disagrees_with_ledger'
  | 'state_disagrees_with_ledger'
  | 'declined_card_charged'
  | 'money_not_conserved'
  | 'process_died'
  | 'wrongly_refused'
  | 'double_capture'
  | 'double_refund'
  | 'over_refund'
  | 'challenge_not_honoured'
  | 'key_reuse_accepted'
  | 'revoked_session_acted'
  | 'racing_actions_both_accepted'
  | 'lost_acknowledged_commit'
  | 'resurrected_row';

export interface Violation {
  kind: ViolationKind;
  /** The intent it concerns (absent for tenant-wide or process violations). */
  intent?: string;
  tenantId?: string;
  paymentId?: string;
  detail: string;
}
