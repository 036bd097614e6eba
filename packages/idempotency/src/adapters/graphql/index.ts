// GraphQL (Envelop / GraphQL Yoga): guards mutations marked idempotent.
export { type IdempotentFieldConfig, idempotentDirectiveTypeDefs } from './idempotent-fields.ts';
export {
  type GraphqlAnswer,
  type GraphqlIdempotencyContext,
  type GraphqlIdempotencyOptions,
  maskUnexpectedError,
  toGraphqlError,
  UNEXPECTED_ERROR_MESSAGE,
  useIdempotency,
} from './plugin.ts';
