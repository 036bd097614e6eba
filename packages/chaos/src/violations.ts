/**
 * Every violation the kit reports, by the name a report and a JUnit test case carry, with
 * what it means: the bug a team looks for when it sees the name.
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
    "The processor's ledger holds more than one charge for one key: a retry charged again (no downstream idempotency key, or a fresh run on retry).",
} as const;

export type ViolationName = keyof typeof VIOLATIONS;

export interface Violation {
  name: ViolationName;
  /** The Idempotency-Key it was seen on, when there is one. */
  key: string | null;
  detail: string;
}
