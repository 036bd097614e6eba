import { randomBytes } from 'node:crypto';
import type { Database } from '@once/api';
import { ApiError } from '@once/api/errors';
import { recordPaymentEvents } from '@once/db/payment-events';
import {
  CHAOS_DROP_COOKIE_NAME,
  CHAOS_PRESS_COOLDOWN_MS,
  type ChaosSwitchboard,
  ChaosSwitchError,
  type ChaosSwitchName,
  ChaosSwitchRateLimited,
  isLauncherSwitch,
  PROCESSOR_FAULT_SWITCHES,
  type PressCooldown,
  type ProcessorFaultSwitchName,
} from './chaos-switchboard.ts';
import { processorAccountOf } from './processor-fault-status.ts';

/** What a pressed switch did, in words for the audience. */
export interface ChaosPressResult {
  switch: ChaosSwitchName;
  did: string;
  at: string;
}

/** A dropped-answer mark is good for an hour: long enough to walk to the checkout tab. */
const DROP_COOKIE_MAX_AGE_SECONDS = 60 * 60;

const isProcessorFault = (name: string): name is ProcessorFaultSwitchName =>
  (PROCESSOR_FAULT_SWITCHES as readonly string[]).includes(name);

/**
 * The worker holding this tenant's most recently claimed running job, and that job's payment,
 * if any: "kill a worker" should hit the one that is charging right now, not a bystander.
 */
async function workerChargingNow(
  db: Database,
  tenantId: string,
): Promise<{ worker: string; paymentId: string } | undefined> {
  const job = await db.query.outboxJobs.findFirst({
    columns: { lockedBy: true, paymentId: true },
    where: (job, { and, eq }) => and(eq(job.tenantId, tenantId), eq(job.status, 'running')),
    orderBy: (job, { desc }) => desc(job.lockedUntil),
  });
  return job?.lockedBy ? { worker: job.lockedBy, paymentId: job.paymentId } : undefined;
}

/**
 * Presses one demo chaos switch and says what it did. Only when the launcher enabled the
 * switches and only for a session the operator code signed in (an API key, or a session it
 * opened, is refused). A worker switch acts on the worker charging one of this tenant's payments
 * (marked on its timeline), else the first one up; `drop_next_response` marks THIS browser by a
 * cookie. One press per switch per `CHAOS_PRESS_COOLDOWN_MS` (process switches system-wide, the
 * others per merchant), refused before anything is touched; a press that could not act costs no
 * wait.
 */
export async function chaosPress({
  ctx,
  input,
  cooldown,
}: {
  ctx: {
    chaos?: ChaosSwitchboard;
    db: Database;
    tenantId: string;
    /** Whether the operator code signed this session in (see `AuthenticatedTenant`). */
    operatorCodeProven: boolean;
    clock: { now(): Date };
    resHeaders: Headers;
    secure: boolean;
  };
  input: { switch: ChaosSwitchName };
  /** The web process's count of presses (one per router). */
  cooldown: PressCooldown;
}): Promise<ChaosPressResult> {
  const { chaos } = ctx;
  if (!chaos) throw new ApiError('chaos_switches_disabled');
  // A merchant credential moves the merchant's money; it does not stop the presenter's
  // processes. Only the code printed in the launcher's terminal does.
  if (!ctx.operatorCodeProven) throw new ApiError('operator_code_required');
  const name = input.switch;
  const nowMs = ctx.clock.now().getTime();
  const key = isLauncherSwitch(name) ? name : `${ctx.tenantId}:${name}`;
  const waitMs = cooldown.take(key, CHAOS_PRESS_COOLDOWN_MS[name], nowMs);
  if (waitMs !== undefined) {
    const retryAfterSeconds = Math.ceil(waitMs / 1000);
    throw new ApiError(
      'chaos_switch_rate_limited',
      `This switch was pressed moments ago; press it again in ${retryAfterSeconds} s`,
      { switch: name, retryAfterSeconds },
    );
  }
  let did: string;
  try {
    if (isLauncherSwitch(name)) {
      const charging =
        name === 'kill_worker' || name === 'pause_worker'
          ? await workerChargingNow(ctx.db, ctx.tenantId)
          : undefined;
      did = await chaos.pressLauncherSwitch(name, charging?.worker);
      // On the payment's timeline: the kill (or pause) is the moment its worker stopped
      // answering, not the lease's end the takeover later shows. Written after the press, on
      // its own: a story entry that cannot be written never fails the press.
      if (charging) {
        await recordPaymentEvents(ctx.db, [
          {
            tenantId: ctx.tenantId,
            paymentId: charging.paymentId,
            actor: 'operator',
            kind: 'chaos.pressed',
            detail: { to: `worker:${charging.worker}`, switch: name, did },
          },
        ]).catch((error: unknown) => console.error('chaos.pressed not recorded:', error));
      }
    } else if (isProcessorFault(name)) {
      const account = await processorAccountOf(ctx.db, ctx.tenantId);
      if (!account) throw new ChaosSwitchError('the tenant has no processor account');
      did = await chaos.armProcessorFault(account, name);
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
    if (error instanceof ChaosSwitchRateLimited) {
      cooldown.release(key, nowMs);
      throw new ApiError('chaos_switch_rate_limited', error.message, {
        switch: name,
        retryAfterSeconds: error.retryAfterSeconds,
      });
    }
    if (error instanceof ChaosSwitchError) {
      cooldown.release(key, nowMs);
      throw new ApiError('chaos_switch_failed', error.message);
    }
    throw error;
  }
  return { switch: name, did, at: ctx.clock.now().toISOString() };
}
