import { z } from 'zod';
import {
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchName,
} from '../../chaos/chaos-switchboard.ts';
import type { ProcessorFaultStatus } from '../../chaos/processor-fault-status.ts';

/** `ops.chaosPress`: which switch. */
export const chaosPressInput = z.object({ switch: z.enum(CHAOS_SWITCHES) });
export type ChaosPressInput = z.infer<typeof chaosPressInput>;

/** What a pressed switch did, in words for the audience. */
export interface ChaosPressResult {
  switch: ChaosSwitchName;
  did: string;
  at: string;
}

/**
 * `ops.chaosStatus`. `enabled: false` (no switches, no parts) unless the launcher enabled the
 * switches; a normal deployment answers that, never an error, so the cockpit stays quiet.
 */
export type ChaosStatusResult =
  | { enabled: false }
  | {
      enabled: true;
      /**
       * Whether this caller may press them: a session the operator code signed in. An API key
       * (or a session it opened) sees the parts but presses nothing (`operator_code_required`).
       */
      pressable: boolean;
      switches: readonly ChaosSwitchName[];
      /** The parts and their state; empty with `launcherError` when the launcher did not answer. */
      parts: ChaosPart[];
      launcherError: string | null;
      /** Each processor fault switch: armed, and the payment it last hit. */
      processorFaults: ProcessorFaultStatus[];
      /** Empty `processorFaults` with this when the processor did not answer. */
      processorError: string | null;
      checkedAt: string;
    };
