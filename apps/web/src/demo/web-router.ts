import { appRouter, createTRPCRouter, operatorProcedureWithoutDatabase } from '@once/api';
import { z } from 'zod';
import { chaosPress } from './chaos-press.ts';
import { chaosStatus } from './chaos-status.ts';
import { CHAOS_SWITCHES, type ChaosSwitchboard, PressCooldown } from './chaos-switchboard.ts';

/**
 * `@once/api`'s router plus the demo's chaos switches; `chaos` is there only when the launcher
 * enabled them, else the status answers `{ enabled: false }` and a press is refused.
 */
export function createWebRouter(chaos: ChaosSwitchboard | undefined) {
  const cooldown = new PressCooldown();
  return createTRPCRouter({
    ...appRouter._def.record,
    ops: {
      ...appRouter._def.record.ops,
      chaosStatus: operatorProcedureWithoutDatabase.query(({ ctx }) =>
        chaosStatus({ ctx: { ...ctx, chaos } }),
      ),
      chaosPress: operatorProcedureWithoutDatabase
        .input(z.object({ switch: z.enum(CHAOS_SWITCHES) }))
        .mutation(({ ctx, input }) => chaosPress({ ctx: { ...ctx, chaos }, input, cooldown })),
    },
  });
}

export type WebRouter = ReturnType<typeof createWebRouter>;
