import type { ProcessorFaultState } from './chaos-switchboard.ts';
import {
  PROCESSOR_FAULT_SWITCH_FAULTS,
  PROCESSOR_FAULT_SWITCHES,
  processorFaultOperation,
} from './processor-fault-switches.ts';

/** A fault still armed, as the processor's `GET /admin/faults` lists it (the fields read here). */
export interface ArmedProcessorFault {
  kind: string;
  /** The one call it hits; null: any its method and path prefix match (a webhook fault). */
  operation: string | null;
}

/** A fault as the processor's `GET /admin/faults/uses` lists it (the fields read here). */
export interface ProcessorFaultUses {
  kind: string;
  uses: { used_at: string; operation: string; object: string | null }[];
}

/**
 * Each switch's state from the processor's faults, matched by kind AND call, so two switches of
 * one kind (a drop on the confirm, another on the refund) never show each other's faults.
 */
export function processorFaultStates(
  armed: ArmedProcessorFault[],
  faults: ProcessorFaultUses[],
): ProcessorFaultState[] {
  return PROCESSOR_FAULT_SWITCHES.map((name) => {
    const { kind } = PROCESSOR_FAULT_SWITCH_FAULTS[name];
    const operation = processorFaultOperation(name);
    const webhook = operation === 'webhooks.deliver';
    const newest = faults
      .filter((f) => f.kind === kind)
      .flatMap((f) => f.uses)
      .filter((use) => use.operation === operation)
      .reduce<ProcessorFaultUses['uses'][number] | undefined>(
        (latest, use) => (!latest || use.used_at > latest.used_at ? use : latest),
        undefined,
      );
    return {
      switch: name,
      armed: armed.some((f) => f.kind === kind && (webhook || f.operation === operation)),
      lastUse: newest
        ? { at: newest.used_at, operation: newest.operation, processorObject: newest.object }
        : null,
    };
  });
}
