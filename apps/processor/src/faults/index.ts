// The fault vocabulary other workspaces derive their processor faults from; it loads no part
// of the processor.
export { FAULT_KINDS, isWebhookFaultKind, MUTATING_OPERATIONS } from './fault-kinds.ts';
