// GraphQL (Envelop / GraphQL Yoga): guards mutations marked idempotent.
export {
  type IdempotentFieldConfig,
  idempotentDirectiveTypeDefs,
  idempotentFieldsOf,
} from './idempotent-fields.ts';
export {
  type GraphqlIdempotencyContext,
  type GraphqlIdempotencyOptions,
  toGraphqlError,
  useIdempotency,
} from './plugin.ts';
