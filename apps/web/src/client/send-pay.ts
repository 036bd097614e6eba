import type { RouterInputs, RouterOutputs } from '@once/api';
import { type AttemptOutcome, newIdempotencyKey } from '@once/idempotency/client';
import { classifyPayError } from './classify-pay-error.ts';
import type { ResponseHeaderRecorder } from './response-header-recorder.ts';
import type { OnceClient } from './trpc-client.ts';

export type PayInput = RouterInputs['checkout']['pay'];
export type PayResult = RouterOutputs['checkout']['pay'];

/** Sends ONE `checkout.pay` with the intent's key and reads back whether it was a replay. */
export async function sendPay(options: {
  client: OnceClient;
  recorder: ResponseHeaderRecorder;
  key: string;
  input: PayInput;
}): Promise<AttemptOutcome<PayResult>> {
  const attemptId = newIdempotencyKey();
  try {
    const result = await options.client.checkout.pay.mutate(options.input, {
      context: { idempotencyKey: options.key, attemptId },
    });
    const recorded = options.recorder.take(attemptId);
    return { kind: 'accepted', result, replayed: recorded?.replayed === true };
  } catch (error) {
    return classifyPayError(error, options.recorder.take(attemptId));
  }
}
