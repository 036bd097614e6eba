export {
  demoConnectionFile,
  removeDemoConnection,
  writeDemoConnection,
} from './demo-connection.ts';
export { type ViolationKind, verifyInvariant } from './verify-invariant.ts';
