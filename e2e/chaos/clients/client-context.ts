import type { History } from '../history.ts';
import type { TenantCatalogue } from '../schedule.ts';

/** What every HTTP customer of a run shares: the history, the web, its catalogue, its clock. */
export interface ClientContext {
  history: History;
  webUrl: () => string;
  catalogue: (tenantId: string) => TenantCatalogue;
  sleep: (ms: number) => Promise<void>;
  /** Past this point (ms since run start) the client stops, whatever it holds. */
  deadlineAt: () => number;
}
