import { authenticateRequest } from '../../auth/authenticate.ts';
import { clientAddressKey } from '../../auth/client-address.ts';
import {
  readSessionCookie,
  sessionClearCookie,
  verifySessionValue,
} from '../../auth/session-cookie.ts';
import { isApiError } from '../../errors/api-error.ts';
import { createTRPCRouter, publicProcedure } from '../../trpc.ts';
import { type SessionView, startSession, startSessionInput } from './start.ts';

export const sessionRouter = createTRPCRouter({
  /** Sets the signed session cookie (`startSession`). */
  start: publicProcedure
    .input(startSessionInput)
    .mutation(({ ctx, input }) =>
      startSession(
        { ...ctx, now: ctx.clock.now(), clientAddress: clientAddressKey(ctx.headers) },
        input,
      ),
    ),
  /**
   * The signed-in tenant and role, or `null` when signed out (no credential, or one that is
   * expired, ended or invalid): a page asks this first, and "nobody is signed in" is an
   * answer, not an error. Other failures (database down) still fail.
   */
  current: publicProcedure.query(async ({ ctx }): Promise<SessionView | null> => {
    try {
      // Who is signed in, shown while the database is away too (the cockpit's parts need none).
      const who = await authenticateRequest({ ...ctx, sessionFromMemory: true });
      return { tenantId: who.tenantId, tenantName: who.tenantName, role: who.role };
    } catch (error) {
      if (isApiError(error)) return null;
      throw error;
    }
  }),
  /**
   * Signs out of the session that speaks for the page (`readSessionCookie`: the cockpit's
   * operator session, the checkout's shopper session), never the other one: an operator session
   * is ended on the server (its cookie, or any copy of it, is refused from then on, on every web
   * process), and the browser is told to forget that cookie.
   * A shopper session has nothing on the server to end. Fails (the cookie is kept) when the
   * database cannot record the end, so a sign-out that did not happen never looks done.
   */
  end: publicProcedure.mutation(async ({ ctx }) => {
    const cookie = readSessionCookie(ctx.headers);
    const claims =
      cookie === undefined
        ? undefined
        : verifySessionValue(cookie.value, ctx.sessionSecret, ctx.clock.now());
    if (claims?.role === 'operator') {
      await ctx.operatorSessions.end(claims.tenantId, claims.sessionId);
    }
    ctx.resHeaders.append('set-cookie', sessionClearCookie(cookie?.name));
    return { ok: true as const };
  }),
});
