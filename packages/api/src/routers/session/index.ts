import { authenticateRequest } from '../../auth/authenticate.ts';
import { readCookie, SESSION_COOKIE_NAME, sessionClearCookie } from '../../auth/session-cookie.ts';
import { createTRPCRouter, publicProcedure } from '../../trpc.ts';
import { startSession } from './start.ts';
import { type SessionView, startSessionInput } from './start.types.ts';

export const sessionRouter = createTRPCRouter({
  /** Sets the signed `once_session` cookie. */
  start: publicProcedure
    .input(startSessionInput)
    .mutation(({ ctx, input }) => startSession({ ctx: { ...ctx, now: ctx.clock.now() }, input })),
  /**
   * The signed-in tenant, or null when the request carries no credential at all (a first
   * visit is not an error). A credential that is present but wrong is still refused.
   */
  current: publicProcedure.query(async ({ ctx }): Promise<SessionView | null> => {
    if (
      ctx.headers.get('authorization') === null &&
      !readCookie(ctx.headers, SESSION_COOKIE_NAME)
    ) {
      return null;
    }
    const who = await authenticateRequest({
      db: ctx.db,
      headers: ctx.headers,
      sessionSecret: ctx.sessionSecret,
      now: ctx.clock.now(),
    });
    return { tenantId: who.tenantId, tenantName: who.tenantName };
  }),
  end: publicProcedure.mutation(({ ctx }) => {
    ctx.resHeaders.append('set-cookie', sessionClearCookie());
    return { ok: true as const };
  }),
});
