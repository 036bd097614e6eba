// GraphQL (Envelop / GraphQL Yoga): guards mutations marked idempotent.

export type { IdempotencyAnswer } from '../../core/answered.ts';
export {
  type GuardedField,
  type IdempotentFieldConfig,
  idempotentDirectiveTypeDefs,
  idempotentFieldsOf,
  type RootField,
  type RootSelection,
  rootSelectionOf,
  UndecidableDirectiveError,
} from './idempotent-fields.ts';
export {
  type GraphqlAnswer,
  type GraphqlGuardRefusalCode,
  type GraphqlIdempotencyContext,
  type GraphqlIdempotencyOptions,
  maskUnexpectedError,
  toGraphqlError,
  UNEXPECTED_ERROR_MESSAGE,
  useIdempotency,
} from './plugin.ts';
