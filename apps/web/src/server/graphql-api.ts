import type { Transaction } from '@once/api';
import { type AuthenticatedTenant, authenticateApiKey } from '@once/api/auth';
import { PAY_OPERATIONS, type PayOrigin, pay, recordGuardAnswer } from '@once/api/checkout';
import { isApiError, refusalOf } from '@once/api/errors';
import {
  capturePaymentInput,
  type MerchantPayment,
  type MoneyActionContext,
  merchantRefundOf,
  type RefundResult,
  readMerchantPayment,
  refundPayment,
  refundPaymentInput,
  requestAuthorizationAction,
  requestKeyOf,
  voidPaymentInput,
} from '@once/api/money-actions';
import {
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyError,
  isIdempotencyError,
} from '@once/idempotency';
import {
  type GraphqlAnswer,
  type GraphqlIdempotencyContext,
  idempotentDirectiveTypeDefs,
  maskUnexpectedError,
  toGraphqlError,
  UNEXPECTED_ERROR_MESSAGE,
  useIdempotency,
} from '@once/idempotency/graphql';
import { GraphQLError } from 'graphql';
import { createSchema, createYoga } from 'graphql-yoga';
import type { z } from 'zod';
import { API_MAX_BODY_BYTES, boundedRequest, refuseDeclaredBodyOver } from './body-limit.ts';
import { graphqlLimits } from './graphql-limits.ts';
import { paymentAfterAction, readMerchantRefunds } from './payment-actions-api.ts';
import { parseInput } from './payment-json-body.ts';
import { merchantPayInput, toPayInput } from './payment-merchant-input.ts';
import type { WebRuntime } from './runtime.ts';

export const GRAPHQL_ENDPOINT = '/api/graphql';

/** What the route hands every request's context: who is calling. */
type GraphqlServerContext = { tenant: AuthenticatedTenant; runtime: WebRuntime };

type GraphqlContext = GraphqlServerContext &
  Partial<GraphqlIdempotencyContext<Transaction>> & {
    /** Set by `pay`'s completion for {@link onPayAnswered}: `existing` means it was there. */
    payOrigin?: PayOrigin;
  };

const typeDefs = /* GraphQL */ `
  ${idempotentDirectiveTypeDefs}

  type PaymentLine {
    productId: String!
    name: String!
    quantity: Int!
    unitAmount: Int!
  }

  "Where the shopper must go before the payment can go on (3-D Secure)."
  type NextAction {
    "redirect_to_url"
    type: String!
    url: String!
  }

  "A payment as GET /api/v1/payments/{id} reads it."
  type Payment {
    paymentId: ID!
    """
    processing, requires_action, requires_capture, succeeded, declined, unknown, failed or
    canceled (Stripe's PaymentIntent words; see the OpenAPI description)
    """
    status: String!
    "automatic or manual"
    captureMethod: String!
    "Minor units (cents)."
    amount: Int!
    "What a capture may take: the authorised amount while requires_capture, else 0."
    amountCapturable: Int!
    "What the processor charged (a captured payment: the captured part)."
    amountReceived: Int!
    "Every refund that has not failed."
    amountRefunded: Int!
    "While requires_action: where to send the shopper; null otherwise."
    nextAction: NextAction
    currency: String!
    lines: [PaymentLine!]!
    customerEmail: String
    "ISO 8601"
    createdAt: String!
  }

  "A refund as POST /api/v1/payments/{id}/refunds answers it."
  type Refund {
    refundId: ID!
    paymentId: ID!
    "Minor units (cents)."
    amount: Int!
    "pending, succeeded or failed"
    status: String!
    reason: String
    failureCode: String
    "ISO 8601"
    createdAt: String!
  }

  enum CaptureMethod {
    automatic
    manual
  }

  enum RefundReason {
    duplicate
    fraudulent
    requested_by_customer
  }

  input PayLineInput {
    productId: String!
    quantity: Int!
  }

  input PayInput {
    lines: [PayLineInput!]!
    customerEmail: String
    "A test payment method id, e.g. pm_card_visa."
    paymentMethod: String
    "manual: only authorise; capture or cancel later. Default automatic."
    captureMethod: CaptureMethod
  }

  type Query {
    "One payment of the calling merchant."
    payment(paymentId: ID!): Payment!
    "The refunds of one payment of the calling merchant, oldest first."
    refunds(paymentId: ID!): [Refund!]!
  }

  type Mutation {
    """
    The GraphQL twin of checkout.pay and POST /api/v1/payments: requires an Idempotency-Key
    header; one payment per (merchant, key) on every transport.
    """
    pay(input: PayInput!): Payment! @idempotent(operation: "${PAY_OPERATIONS.graphql}")
    "Capture an authorised payment, all or amount (POST /api/v1/payments/{id}/capture)."
    capturePayment(paymentId: ID!, amount: Int): Payment!
      @idempotent(operation: "graphql.payments.capture")
    "Cancel (void) an authorised payment (POST /api/v1/payments/{id}/cancel)."
    cancelPayment(paymentId: ID!): Payment!
      @idempotent(operation: "graphql.payments.cancel")
    "Refund a payment, all that is left or amount (POST /api/v1/payments/{id}/refunds)."
    refundPayment(paymentId: ID!, amount: Int, reason: RefundReason): Refund!
      @idempotent(operation: "graphql.payments.refund")
  }
`;

function logDatabaseAway(error: unknown): void {
  console.log(`web: graphql: database unavailable: ${String(error)}`);
}

/**
 * A resolver's error through the API's one mapping (`refusalOf`): refusals keep their codes and
 * statuses, a database that is away is the fail-closed 503 (the guard answers 409 outcome
 * unknown instead when the key was advanced first), anything else is masked by Yoga.
 */
function asGraphqlError(error: unknown): unknown {
  const refusal = refusalOf(error);
  if (!refusal) return error;
  if (isApiError(refusal)) {
    const { code, details, status } = refusal;
    return new GraphQLError(refusal.message, {
      originalError: refusal,
      extensions: { code, ...(details ? { details } : {}), http: { status } },
    });
  }
  if (refusal !== error) logDatabaseAway(error);
  return toGraphqlError(refusal);
}

function isGraphqlError(value: unknown): value is GraphQLError {
  // By name: Yoga's executor may hold another copy of graphql, which `instanceof` misses.
  return value instanceof Error && value.name === 'GraphQLError';
}

/**
 * What the client may see of an error, for Yoga and the guard alike: GraphQL's own errors and
 * the refusals keep their message and code; anything else (SQL, host names, a bug) is masked.
 */
function maskGraphqlError(error: unknown): GraphQLError {
  let cause: unknown = error;
  while (isGraphqlError(cause)) cause = cause.originalError;
  const located = isGraphqlError(error) ? error : undefined;
  // Raised as a GraphQL error on purpose (validation, variables, the limits, the guard).
  if (located && cause == null) return located;
  if (isApiError(cause) || isIdempotencyError(cause)) {
    const shown = asGraphqlError(cause) as GraphQLError;
    // Already the refusal (a resolver converted it): the same object, so Yoga does not log it.
    if (located && located.extensions.code === shown.extensions.code) return located;
    return new GraphQLError(shown.message, {
      nodes: located?.nodes,
      path: located?.path,
      extensions: shown.extensions,
    });
  }
  return located
    ? maskUnexpectedError(located)
    : new GraphQLError(UNEXPECTED_ERROR_MESSAGE, { extensions: { code: 'INTERNAL_SERVER_ERROR' } });
}

/** {@link maskGraphqlError} for the guard, which answers past Yoga (and its logging). */
function maskGuardedError(error: GraphQLError): GraphQLError {
  const masked = maskGraphqlError(error);
  if (masked.extensions.code === 'INTERNAL_SERVER_ERROR') {
    console.error('web: graphql: unexpected error in a guarded mutation, answered masked:', error);
  }
  return masked;
}

/** The recovery point of a money mutation whose action, job and answer are committed. */
const MONEY_ACTION_ACCEPTED = 'money_action_accepted';
/** The recovery point of a `pay` whose payment is committed. */
const PAY_ACCEPTED = 'pay_accepted';

/** A resolver whose errors go through the API's one mapping ({@link asGraphqlError}). */
function mapped<TArgs, TResult>(
  resolve: (args: TArgs, context: GraphqlContext) => Promise<TResult>,
) {
  return async (_root: unknown, args: TArgs, context: GraphqlContext): Promise<TResult> => {
    try {
      return await resolve(args, context);
    } catch (error) {
      throw asGraphqlError(error);
    }
  };
}

/**
 * A money mutation (capture, cancel, refund) on the business function REST uses. Its transaction
 * records the answer as the key's recovery point, so a retry that finds the key abandoned after
 * the commit answers it instead of acting again.
 */
function moneyResolver<TInput, TResult>(
  schema: z.ZodType<TInput>,
  act: (ctx: MoneyActionContext<TResult>, input: TInput) => Promise<unknown>,
  answer: (tx: Transaction, tenantId: string, result: TResult, input: TInput) => Promise<unknown>,
) {
  return mapped(async (args: unknown, context) => {
    const input = parseInput(schema, args);
    const exec = context.idempotency;
    // The plugin refuses a guarded mutation without a key before this runs.
    if (!exec?.key) throw new IdempotencyError('idempotency_key_missing');
    if (exec.recoveryPoint === MONEY_ACTION_ACCEPTED) return exec.recoveryData;
    let answered: unknown;
    await act(
      {
        db: context.runtime.deps.db,
        tenantId: context.tenant.tenantId,
        principal: context.tenant.principal,
        requestKey: requestKeyOf(exec),
        notifyOutbox: context.runtime.deps.outboxNotify,
        complete: async (tx, result) => {
          answered = await answer(tx, context.tenant.tenantId, result, input);
          await exec.advance(tx, MONEY_ACTION_ACCEPTED, answered);
        },
      },
      input,
    );
    return answered;
  });
}

const resolvers = {
  Query: {
    payment: mapped((args: { paymentId: string }, context) =>
      readMerchantPayment(context.runtime.deps.db, context.tenant.tenantId, args.paymentId),
    ),
    refunds: mapped((args: { paymentId: string }, context) =>
      readMerchantRefunds(context.runtime.deps.db, context.tenant.tenantId, args.paymentId),
    ),
  },
  Mutation: {
    capturePayment: moneyResolver(
      capturePaymentInput,
      (ctx, input) => requestAuthorizationAction(ctx, 'capture', input),
      paymentAfterAction,
    ),
    cancelPayment: moneyResolver(
      voidPaymentInput,
      (ctx, input) => requestAuthorizationAction(ctx, 'void', input),
      paymentAfterAction,
    ),
    refundPayment: moneyResolver(
      refundPaymentInput,
      (ctx: MoneyActionContext<RefundResult>, input) => refundPayment(ctx, input),
      async (_tx, _tenantId, result: RefundResult, input) =>
        merchantRefundOf(result, input.reason ?? null),
    ),
    pay: mapped(async (args: { input: unknown }, context): Promise<MerchantPayment> => {
      // GraphQL checked the shape; the API's own bounds (lines, lengths, pm_ ids) are zod's.
      const parsed = parseInput(merchantPayInput, args.input);
      const key = context.idempotency?.key;
      // The plugin refuses a guarded mutation without a key before this runs.
      if (!key) throw new IdempotencyError('idempotency_key_missing');
      const result = await pay({
        ctx: {
          db: context.runtime.deps.db,
          tenantId: context.tenant.tenantId,
          placedBy: context.tenant.principal,
          transport: 'graphql',
          notifyOutbox: context.runtime.deps.outboxNotify,
          idempotency: {
            key,
            // The plugin stores the executed result itself, after this transaction: here
            // the origin is noted (an existing payment is answered as a replay), and the key
            // advanced with the payment, so a cut COMMIT is answered outcome unknown (the
            // retry meets the payment by its key).
            complete: async (tx, _result, origin) => {
              context.payOrigin = origin;
              await context.idempotency?.advance(tx, PAY_ACCEPTED);
            },
          },
        },
        input: toPayInput(parsed),
      });
      // The payment as the merchant reads it (its status in Stripe's words, its amounts).
      return readMerchantPayment(
        context.runtime.deps.db,
        context.tenant.tenantId,
        result.paymentId,
      );
    }),
  },
};

/**
 * The guard's `onAnswered`, as REST's and tRPC's: every answer shows on the payment's timeline. A
 * `pay` that found the payment this key already made (another transport, an expired key row)
 * charged nothing, so its result is marked as a replay (the guard's stored copy stays plain).
 */
async function onPayAnswered(answer: GraphqlAnswer, context: GraphqlContext): Promise<void> {
  if (answer.outcome === 'executed' && context.payOrigin === 'existing') {
    // Yoga sends `extensions.http.headers` as headers, not in the body.
    answer.result.extensions = {
      ...answer.result.extensions,
      idempotency: { replayed: true },
      http: { headers: { [IDEMPOTENT_REPLAYED_HEADER]: 'true' } },
    };
  }
  await recordGuardAnswer(
    context.runtime.deps.db,
    answer,
    () => answer.result.data?.[answer.responseKey],
  );
}

/** A refusal before GraphQL runs, in GraphQL's shape with REST's status; undefined for a bug. */
function refusalFor(error: unknown): Response | undefined {
  const refusal = refusalOf(error);
  if (!refusal) return undefined;
  if (refusal !== error) logDatabaseAway(error);
  const retryAfter = isApiError(refusal) ? undefined : refusal.retryAfterSeconds;
  return Response.json(
    { errors: [{ message: refusal.message, extensions: { code: refusal.code } }] },
    {
      status: refusal.status,
      headers: {
        'content-type': 'application/graphql-response+json',
        ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
      },
    },
  );
}

/**
 * `POST /api/graphql`, guarded by `@once/idempotency/graphql`: the key from the `Idempotency-Key`
 * header, the merchant from a Bearer API key (cookies are ignored, so a browser session cannot
 * be ridden into it from another site), never from the document. `pay` is the same as tRPC's
 * and REST's, so one payment per (tenant, key) holds across all three. Refusals carry REST's
 * status and `errors[0].extensions.code`; the document's limits are in `graphql-limits.ts`.
 */
export function createGraphqlHandler(
  getRuntime: () => Promise<WebRuntime>,
  options: { introspection?: boolean } = {},
) {
  // Read once, when the route module loads: Next sets NODE_ENV before that.
  const introspection = options.introspection ?? process.env.NODE_ENV !== 'production';
  let yoga: ReturnType<typeof createYoga<GraphqlServerContext>> | undefined;
  const yogaFor = (runtime: WebRuntime) => {
    yoga ??= createYoga<GraphqlServerContext>({
      schema: createSchema<GraphqlContext>({ typeDefs, resolvers }),
      graphqlEndpoint: GRAPHQL_ENDPOINT,
      graphiql: false,
      landingPage: false,
      maskedErrors: { maskError: (error) => maskGraphqlError(error) },
      plugins: [
        graphqlLimits({ introspection }),
        // biome-ignore lint/correctness/useHookAtTopLevel: an Envelop plugin factory (Envelop names them use*), not a React hook
        useIdempotency<GraphqlContext, Transaction>({
          idempotency: runtime.deps.idempotencyEngine,
          getTenantId: (context) => context.tenant.tenantId,
          getPrincipal: (context) => context.tenant.principal,
          // The guard answers itself, past Yoga's masking: the same rule, so a guarded
          // mutation's errors look like every other's (and are stored that way).
          maskError: maskGuardedError,
          onAnswered: onPayAnswered,
        }),
      ],
    });
    return yoga;
  };

  return async (request: Request): Promise<Response> => {
    let context: GraphqlServerContext;
    let bounded: Request;
    try {
      refuseDeclaredBodyOver(request, API_MAX_BODY_BYTES);
      const runtime = await getRuntime();
      // Authenticate before reading the body or looking at the key, as REST does.
      const tenant = await authenticateApiKey(
        runtime.deps.db,
        request.headers.get('authorization'),
      );
      bounded = await boundedRequest(request);
      context = { tenant, runtime };
    } catch (error) {
      const refusal = refusalFor(error);
      if (refusal) return refusal;
      throw error;
    }
    return yogaFor(context.runtime).fetch(bounded, context);
  };
}
