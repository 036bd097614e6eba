import { authenticateRequest } from '../../auth/authenticate.ts';
import { clientAddressKey } from '../../auth/client-address.ts';
import { sessionClearCookie } from '../../auth/session-cookie.ts';
import { isApiError } from '../../errors/api-error.ts';
import { createTRPCRouter, publicProcedure } from '../../trpc.ts';
import { startSession } from './start.ts';
import { type SessionView, startSessionInput } from './start.types.ts';

export const sessionRouter = createTRPCRouter({
  /** Sets the signed `once_session` cookie (rate-limited per client address and tenant). */
  start: publicProcedure.input(startSessionInput).mutation(({ ctx, input }) =>
    startSession({
      ctx: { ...ctx, now: ctx.clock.now(), clientAddress: clientAddressKey(ctx.headers) },
      input,
    }),
  ),
  /**
   * The signed-in tenant and role, or `null` when signed out (no credential, or one that is
   * expired or invalid): a page asks this first, and "nobody is signed in" is an answer, not
   * an error. Other failures (database down) still fail.
   */
  current: publicProcedure.query(async ({ ctx }): Promise<SessionView | null> => {
    try {
      const who = await authenticateRequest({
        db: ctx.db,
        headers: ctx.headers,
        sessionSecret: ctx.sessionSecret,
        sessionTenants: ctx.sessionTenants,
        now: ctx.clock.now(),
      });
      return { tenantId: who.tenantId, tenantName: who.tenantName, role: who.role };
    } catch (error) {
      if (isApiError(error)) return null;
      throw error;
    }
  }),
  end: publicProcedure.mutation(({ ctx }) => {
    ctx.resHeaders.append('set-cookie', sessionClearCookie());
    return { ok: true as const };
  }),
});
