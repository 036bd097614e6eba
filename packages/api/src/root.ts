import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { catalogueRouter } from './routers/catalogue/index.ts';
import { checkoutRouter } from './routers/checkout/index.ts';
import { opsRouter } from './routers/ops/index.ts';
import { sessionRouter } from './routers/session/index.ts';
import { createCallerFactory, createTRPCRouter } from './trpc.ts';

export const appRouter = createTRPCRouter({
  session: sessionRouter,
  catalogue: catalogueRouter,
  checkout: checkoutRouter,
  ops: opsRouter,
});

export type AppRouter = typeof appRouter;
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/** Calls procedures in-process (tests, server components). */
export const createCaller = createCallerFactory(appRouter);
