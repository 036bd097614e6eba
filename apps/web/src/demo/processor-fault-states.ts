import { PROCESSOR_FAULT_SWITCHES, type ProcessorFaultState } from '@once/api/chaos-switchboard';

/** A fault as the processor's `GET /admin/faults/uses` lists it (the fields read here). */
export interface ProcessorFaultUses {
  kind: string;
  remaining: number;
  uses: { used_at: string; operation: string; object: string | null }[];
}

/**
 * Each switch's state from the faults of its kind (`processor_<kind>`): armed while one has
 * uses left; its last use the newest of theirs. Faults of other kinds (a lag's `not_found`)
 * belong to no switch.
 */
export function processorFaultStates(faults: ProcessorFaultUses[]): ProcessorFaultState[] {
  return PROCESSOR_FAULT_SWITCHES.map((name) => {
    const ofKind = faults.filter((f) => `processor_${f.kind}` === name);
    const newest = ofKind
      .flatMap((f) => f.uses)
      .reduce<ProcessorFaultUses['uses'][number] | undefined>(
        (latest, use) => (!latest || use.used_at > latest.used_at ? use : latest),
        undefined,
      );
    return {
      switch: name,
      armed: ofKind.some((f) => f.remaining > 0),
      lastUse: newest
        ? { at: newest.used_at, operation: newest.operation, processorObject: newest.object }
        : null,
    };
  });
}
