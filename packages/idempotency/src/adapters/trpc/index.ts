// Public face of the tRPC adapter.
export {
  type IdempotencyErrorData,
  idempotencyErrorData,
  idempotencyErrorFormatter,
} from './error-formatter.ts';
export {
  createIdempotencyPlugin,
  type IdempotencyMeta,
  type IdempotencyPluginOptions,
  type IdempotencyProcedureMeta,
  type TrpcIdempotencyContext,
} from './plugin.ts';
export { idempotencyResponseMeta } from './response-meta.ts';
