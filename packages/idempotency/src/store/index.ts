// What someone writing a store needs: the port the engine calls, the records and inputs it
// passes, and the recovery point a fresh key starts at. Types only, plus that one constant;
// the contract tests that check a store keeps the port's promises are in `./store/contract`.
export {
  type ClaimResumableInput,
  type HolderWriteResult,
  type IdempotencyStore,
  INITIAL_RECOVERY_POINT,
  type InsertCompletedInput,
  type InsertCompletedResult,
  type KeyIdentity,
  type KeyLookup,
  type KeyRecord,
  type KeyState,
  type RateLimitScope,
  type ReserveInput,
  type ReserveResult,
  type StoredResponse,
} from '../core/types.ts';
