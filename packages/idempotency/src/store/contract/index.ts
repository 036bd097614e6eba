// The store contract: the promises of `IdempotencyStore` as test cases a store author runs
// in their own test runner. Node only (it asserts with `node:assert`).
export { type StoreContractCase, storeContractCases } from './store-contract.ts';
