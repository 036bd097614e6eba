/**
 * The least work a run must show to prove anything: a run whose clients crashed, whose web
 * answered nothing, or whose faults met no checkout passes the checker vacuously. Each
 * profile that asserts coverage names its floors (`ChaosProfile.floors`, one home).
 */
export interface CoverageFloors {
  /** Intents whose key has a payment in the app. */
  intentsWithPayment: number;
  /** Browser customers whose page sent a checkout (a customer let in who did nothing is not one). */
  browserStarted: number;
  /** Browser customers whose checkout made a payment. */
  browserWithPayment: number;
  /** Client requests answered ok (status reads not counted). */
  requestsOk: number;
  killsInAmbiguityWindow: number;
  /** Lost responses whose request committed. */
  lostResponsesCommitted: number;
  leaseTakeovers: number;
  /** Late duplicates sent after the checkout key's retention. */
  expiriesCrossed: number;
  /** Payments the operator captured, and refunds the processor took. */
  captures: number;
  refunds: number;
  /** 3-D Secure challenges a shopper answered or left. */
  threeDSecure: number;
}
