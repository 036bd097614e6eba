import { sessionClearCookie } from '../../auth/session-cookie.ts';
import { authedProcedure, createTRPCRouter, publicProcedure } from '../../trpc.ts';
import { startSession } from './start.ts';
import { type SessionView, startSessionInput } from './start.types.ts';

export const sessionRouter = createTRPCRouter({
  /** Sets the signed `once_session` cookie. */
  start: publicProcedure
    .input(startSessionInput)
    .mutation(({ ctx, input }) => startSession({ ctx: { ...ctx, now: ctx.clock.now() }, input })),
  /** The signed-in tenant (UNAUTHORIZED / `unauthenticated` when there is none). */
  current: authedProcedure.query(
    ({ ctx }): SessionView => ({ tenantId: ctx.tenantId, tenantName: ctx.tenantName }),
  ),
  end: publicProcedure.mutation(({ ctx }) => {
    ctx.resHeaders.append('set-cookie', sessionClearCookie());
    return { ok: true as const };
  }),
});
