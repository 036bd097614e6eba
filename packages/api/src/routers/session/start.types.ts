import { z } from 'zod';
import type { SessionRole } from '../../auth/session-cookie.ts';

/**
 * Sign in the browser: with a tenant's API key (real credential: an operator session), or, in
 * a demo deployment only, by picking a demo tenant and a role (`shopper` by default, or
 * `operator` for the cockpit, which also needs the deployment's `operatorCode`). Either way the tenant and the role land in a signed cookie;
 * they are never read from a later request's body.
 */
export const startSessionInput = z.union([
  z.object({ apiKey: z.string().min(1).max(200) }),
  z.object({
    demoTenantId: z.string().min(1).max(100),
    role: z.enum(['shopper', 'operator']).optional(),
    /** Required with `role: 'operator'`: the code `npm run demo` prints (ONCE_OPERATOR_CODE). */
    operatorCode: z.string().max(200).optional(),
  }),
]);
export type StartSessionInput = z.infer<typeof startSessionInput>;

export interface SessionView {
  tenantId: string;
  tenantName: string;
  /** `shopper`: pays and reads its own payments; `operator`: also the cockpit (`ops.*`). */
  role: SessionRole;
}
