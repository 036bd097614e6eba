// Public face of @once/api: the tRPC router, its context and the dependencies a process builds
// once, and the operator procedure an app builds procedures of its own on (the web app's demo
// switches). Checkout, webhooks, errors, authentication, the operators' views and the ledger
// client are entry points of their own (see package.json "exports").

export { readAnswerEncryption } from './answer-keys.ts';
export { readApiEnv } from './api-env.ts';
export { type Context, createContext } from './context.ts';
export type { Database, Transaction } from './database.ts';
export { type ApiDependencies, createApiDependencies } from './dependencies.ts';
export {
  type AppRouter,
  appRouter,
  createCaller,
  type RouterInputs,
  type RouterOutputs,
} from './root.ts';
export { createTRPCRouter, operatorProcedure, operatorProcedureWithoutDatabase } from './trpc.ts';
