import { randomBytes } from 'node:crypto';
import { outboxJobs, tenants } from '@once/db/schema';
import { and, desc, eq } from 'drizzle-orm';
import {
  CHAOS_DROP_COOKIE_NAME,
  type ChaosSwitchboard,
  ChaosSwitchError,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
  PROCESSOR_FAULT_SWITCHES,
  type ProcessorFaultSwitchName,
} from '../../chaos/chaos-switchboard.ts';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import type { ChaosPressInput, ChaosPressResult } from './chaos.types.ts';

/** A dropped-answer mark is good for an hour: long enough to walk to the checkout tab. */
const DROP_COOKIE_MAX_AGE_SECONDS = 60 * 60;

const isLauncherSwitch = (name: string): name is LauncherSwitchName =>
  (LAUNCHER_SWITCHES as readonly string[]).includes(name);
const isProcessorFault = (name: string): name is ProcessorFaultSwitchName =>
  (PROCESSOR_FAULT_SWITCHES as readonly string[]).includes(name);

/**
 * The worker holding this tenant's most recently claimed running job, if any: "kill a
 * worker" should hit the one that is charging right now, not a bystander.
 */
async function workerChargingNow(db: Database, tenantId: string): Promise<string | undefined> {
  const [job] = await db
    .select({ lockedBy: outboxJobs.lockedBy })
    .from(outboxJobs)
    .where(and(eq(outboxJobs.tenantId, tenantId), eq(outboxJobs.status, 'running')))
    .orderBy(desc(outboxJobs.lockedUntil))
    .limit(1);
  return job?.lockedBy ?? undefined;
}

/**
 * Presses one demo chaos switch and says what it did. Refused with `chaos_switches_disabled`
 * unless the launcher enabled the switches; a switch that cannot act now (no worker up, the
 * processor not answering) is refused with `chaos_switch_failed` and the reason.
 *
 * `kill_worker` and `pause_worker` act on the worker charging one of this tenant's payments
 * right now, if one is; otherwise on the first worker that is up.
 *
 * `drop_next_response` marks THIS browser with a cookie: its next `checkout.pay` runs and
 * commits, then the web process closes the connection instead of answering.
 *
 * @example
 * await chaosPress({ ctx, input: { switch: 'kill_worker' } });
 * // { switch: 'kill_worker', did: 'worker-1 (pid 4242) killed with SIGKILL; ...', at: '...' }
 */
export async function chaosPress({
  ctx,
  input,
}: {
  ctx: {
    chaos?: ChaosSwitchboard;
    db: Database;
    tenantId: string;
    clock: Clock;
    resHeaders: Headers;
    secure: boolean;
  };
  input: ChaosPressInput;
}): Promise<ChaosPressResult> {
  const { chaos } = ctx;
  if (!chaos) throw new ApiError('chaos_switches_disabled');
  const name = input.switch;
  let did: string;
  try {
    if (isLauncherSwitch(name)) {
      const target =
        name === 'kill_worker' || name === 'pause_worker'
          ? await workerChargingNow(ctx.db, ctx.tenantId)
          : undefined;
      did = await chaos.pressLauncherSwitch(name, target);
    } else if (isProcessorFault(name)) {
      const [tenant] = await ctx.db
        .select({ account: tenants.processorAccountId })
        .from(tenants)
        .where(eq(tenants.id, ctx.tenantId))
        .limit(1);
      if (!tenant?.account) throw new ChaosSwitchError('the tenant has no processor account');
      did = await chaos.armProcessorFault(tenant.account, name);
    } else {
      const token = randomBytes(16).toString('hex');
      chaos.armDropNextResponse(token);
      ctx.resHeaders.append(
        'set-cookie',
        `${CHAOS_DROP_COOKIE_NAME}=${token}; Path=/api/trpc; HttpOnly; SameSite=Lax; ` +
          `Max-Age=${DROP_COOKIE_MAX_AGE_SECONDS}${ctx.secure ? '; Secure' : ''}`,
      );
      did =
        "this browser's next payment is committed by the server, then its answer is dropped " +
        '(the connection is closed)';
    }
  } catch (error) {
    if (error instanceof ChaosSwitchError) {
      throw new ApiError('chaos_switch_failed', error.message);
    }
    throw error;
  }
  return { switch: name, did, at: ctx.clock.now().toISOString() };
}
