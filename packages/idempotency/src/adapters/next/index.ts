// Next.js app router: route handlers (through the fetch wrapper) and Server Actions.
// Imports nothing from Next.js at run time: the route context is typed structurally.
export type { IdempotentActionResult } from './action-result.ts';
export { idempotentRouteHandler, type NextRouteContext } from './route-handler.ts';
export {
  type ActionExecution,
  IDEMPOTENCY_KEY_FIELD,
  type IdempotentActionOptions,
  idempotentAction,
} from './server-action.ts';
