import { z } from 'zod';

/** Every operator list: newest first, at most `limit` rows, always the caller's tenant. */
export const opsListInput = z
  .object({ limit: z.number().int().min(1).max(200).default(50) })
  .default({ limit: 50 });
export type OpsListInput = z.infer<typeof opsListInput>;
