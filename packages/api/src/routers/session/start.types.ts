import { z } from 'zod';

/**
 * Sign in the browser: with a tenant's API key (real credential), or, in a demo deployment
 * only, by picking a demo tenant. Either way the tenant lands in a signed cookie; it is never
 * read from a later request's body.
 */
export const startSessionInput = z.union([
  z.object({ apiKey: z.string().min(1).max(200) }),
  z.object({ demoTenantId: z.string().min(1).max(100) }),
]);
export type StartSessionInput = z.infer<typeof startSessionInput>;

export interface SessionView {
  tenantId: string;
  tenantName: string;
}
