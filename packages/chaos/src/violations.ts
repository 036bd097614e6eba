/**
 * Every violation the kit reports, black-box and against a target, by the name a report and
 * a JUnit test case carry, with what it means: the bug a team looks for when it sees the name.
 */
export const VIOLATIONS = {
  missing_key_not_rejected:
    'A request without Idempotency-Key was not answered 400 (IETF draft: the key is required).',
  reused_key_not_rejected:
    'A key sent again with another body was not answered 422 (IETF draft): the key was reused.',
  in_flight_not_rejected:
    'Two requests with one key at the same time both ran (two different successful answers), or the IETF probe got no 409: nothing guarded the key while the first was in flight (check-then-act, or the key stored only on success).',
  error_not_problem_json:
    'An idempotency error (400, 409, 422) was not application/problem+json (RFC 9457).',
  response_not_replayed:
    'A retry with the same key and body got a different successful answer: the operation ran again instead of replaying the stored response.',
  replay_not_marked:
    'A repeated successful answer lacked `Idempotent-Replayed: true` (Stripe): the client cannot tell a replay from a fresh run.',
  double_charge:
    "The processor's ledger holds more than one charge for one key or payment: a retry charged again (no downstream idempotency key, or a fresh run on retry).",
  duplicate_payment: 'One checkout key made two payments, or one intent was answered with two.',
  wrong_amount: 'A charge or payment of another amount than the cart the client sent.',
  charge_without_payment: "A charge in the processor's ledger names no payment of the app.",
  missing_payment: 'A checkout answered ok has no payment in the app (a lost commit).',
  not_terminal: 'A payment or refund still unsettled after the heal and the convergence wait.',
  charged_after_refusals: 'Every answer to a checkout was a refusal, yet money was charged.',
  shown_disagrees_with_ledger:
    "What a client was last shown disagrees with the processor's ledger.",
  state_disagrees_with_ledger: "A payment's or refund's state disagrees with the ledger.",
  declined_card_charged: 'A declined test card ended succeeded.',
  money_not_conserved:
    'Charges minus refunds at the processor differ from what the app says it received and refunded.',
  process_died: 'A process exited that the nemesis did not kill.',
  wrongly_refused:
    'A client was refused although its key was never used otherwise (422 for one cart, or an accepted key refused later).',
  double_capture: 'An authorisation captured twice at the processor.',
  double_refund: 'One refund key refunded twice, or more money back than the app refunded.',
  over_refund: 'More refunded than the payment received, at the processor or in the app.',
  challenge_not_honoured: 'A 3-D Secure challenge failed or left, yet the payment charged.',
  key_reuse_accepted: "An operator key took a second kind of action (a capture's key refunded).",
  revoked_session_acted: 'A request from a signed-out operator session changed something.',
  racing_actions_both_accepted:
    'Two operators acting on one payment at once under two keys were both accepted.',
  lost_acknowledged_commit:
    'A failover lost a payment or refund the client had been answered for (synchronous modes).',
  resurrected_row: 'A row a failover lost came back.',
} as const;

export type ViolationKind = keyof typeof VIOLATIONS;

export interface Violation {
  kind: ViolationKind;
  /** The Idempotency-Key it was seen on (black-box), when there is one. */
  key?: string | null;
  /** The intent it concerns (absent for tenant-wide or process violations). */
  intent?: string;
  tenantId?: string;
  paymentId?: string;
  detail: string;
}
