import { appRouter, createTRPCRouter, operatorProcedure } from '@once/api';
import { z } from 'zod';
import { chaosPress } from './chaos-press.ts';
import { chaosStatus } from './chaos-status.ts';
import { CHAOS_SWITCHES, type ChaosSwitchboard, PressCooldown } from './chaos-switchboard.ts';

/**
 * The web app's tRPC router: `@once/api`'s, plus the demo's chaos switches as
 * `ops.chaosStatus` and `ops.chaosPress`. `chaos` is there only when the launcher enabled the
 * switches (`npm run demo`); without it the status answers `{ enabled: false }` and a press is
 * refused with `chaos_switches_disabled`.
 *
 * @example
 * const router = createWebRouter(createHttpChaosSwitchboard({ ... }));
 */
export function createWebRouter(chaos: ChaosSwitchboard | undefined) {
  const cooldown = new PressCooldown();
  return createTRPCRouter({
    ...appRouter._def.record,
    ops: {
      ...appRouter._def.record.ops,
      /** The demo's parts and switches; `{ enabled: false }` unless the launcher enabled them. */
      chaosStatus: operatorProcedure.query(({ ctx }) => chaosStatus({ ctx: { ...ctx, chaos } })),
      /** Presses one demo chaos switch; the operator code's session only. */
      chaosPress: operatorProcedure
        .input(z.object({ switch: z.enum(CHAOS_SWITCHES) }))
        .mutation(({ ctx, input }) => chaosPress({ ctx: { ...ctx, chaos }, input, cooldown })),
    },
  });
}

export type WebRouter = ReturnType<typeof createWebRouter>;
