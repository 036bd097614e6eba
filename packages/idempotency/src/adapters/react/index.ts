// React: the hook over the framework-free client (`@once/idempotency/client`), which a
// component imports for the manager, the retry flow and their types.
export {
  type IdempotencyKeyState,
  type UseIdempotencyKeyOptions,
  useIdempotencyKey,
} from './use-idempotency-key.ts';
