// Public face of @once/api: the router, its types, the context, the shared business
// functions the REST routes call, and the one error mapping.

export { hashApiKey } from '@once/db';
export {
  type ApplyOutcome,
  applyProcessorEvent,
  downstreamKeyFor,
  handledProcessorEventTypes,
  type ProcessorPaymentIntentEvent,
} from '@once/payments';
export {
  type ApiEnvSettings,
  DEFAULT_CHECKOUT_KEY_TTL_MS,
  DEFAULT_MAX_NEW_KEYS_PER_MINUTE,
  readApiEnv,
} from './api-env.ts';
export { type AuthenticatedTenant, authenticateRequest } from './auth/authenticate.ts';
export { CLIENT_ADDRESS_HEADER } from './auth/client-address.ts';
export { SESSION_COOKIE_NAME } from './auth/session-cookie.ts';
export {
  CHAOS_DROP_COOKIE_NAME,
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchboard,
  ChaosSwitchError,
  type ChaosSwitchName,
  LAUNCHER_SWITCHES,
  PROCESSOR_FAULT_SWITCHES,
} from './chaos/chaos-switchboard.ts';
export {
  createHttpChaosSwitchboard,
  type HttpChaosSwitchboardOptions,
} from './chaos/http-chaos-switchboard.ts';
export { checkoutFingerprint, normalisePayInput } from './checkout/checkout-fingerprint.ts';
export {
  type PayTransport,
  recordReplayedAttempt,
} from './checkout/pay-attempt-events.ts';
export { type Clock, systemClock } from './clock.ts';
export { type Context, createContext } from './context.ts';
export type { Database, Transaction } from './database.ts';
export {
  type ApiDependencies,
  apiIdempotencyPolicies,
  apiIdempotencyPoliciesFor,
  createApiDependencies,
} from './dependencies.ts';
export {
  API_PROBLEM_TYPE_BASE,
  ApiError,
  type ApiErrorCode,
  apiErrorCatalogue,
  isApiError,
} from './errors/api-error.ts';
export {
  apiErrorToTRPC,
  apiProblemResponse,
  refusalOf,
  toProblemResponse,
} from './errors/to-transport-error.ts';
export { resolveEventTenant } from './payments/resolve-event-tenant.ts';
export { recordWebhookEvent } from './payments/webhook-events.ts';
export {
  createHttpProcessorLedger,
  type HttpProcessorLedgerOptions,
} from './processor/http-processor-ledger.ts';
export {
  type LedgerCharge,
  type ProcessorLedger,
  ProcessorUnreachableError,
} from './processor/processor-ledger.ts';
export {
  type AppRouter,
  appRouter,
  createCaller,
  type RouterInputs,
  type RouterOutputs,
} from './root.ts';
export {
  type PayIdempotency,
  type PayOrigin,
  pay,
} from './routers/checkout/pay.ts';
export {
  PAY_INPUT_LIMITS,
  type PayInput,
  type PayResult,
  payInput,
} from './routers/checkout/pay.types.ts';
export { status as paymentStatus, toPaymentView } from './routers/checkout/status.ts';
export type { PaymentView } from './routers/checkout/status.types.ts';
export type { ChaosPressResult, ChaosStatusResult } from './routers/ops/chaos.types.ts';
export type {
  LedgerVerdict,
  LedgerVerdictSeverity,
  OpsLedgerResult,
  OpsLedgerRow,
  ProcessorSide,
} from './routers/ops/ledger.types.ts';
export { judgeLedgerVerdict } from './routers/ops/ledger-verdict.ts';
