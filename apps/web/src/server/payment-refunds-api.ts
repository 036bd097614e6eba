import { authenticateApiKey } from '@once/api/auth';
import { listMerchantRefunds, readMerchantPayment } from '@once/api/money-actions';
import { answeringApiErrors } from './payments-api.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * `GET /api/v1/payments/{id}/refunds`: every refund of a payment of the caller's tenant, oldest
 * first, each as it stands now (`pending`, `succeeded`, `failed`); 404 problem+json for a
 * payment that is not the tenant's.
 *
 * @example
 * export const GET = (req, { params }) => listRefunds(req, (await params).id);
 */
export function createPaymentRefundsGetHandler(getRuntime: () => Promise<WebRuntime>) {
  return async (request: Request, paymentId: string): Promise<Response> =>
    answeringApiErrors(async () => {
      const { deps } = await getRuntime();
      const tenant = await authenticateApiKey(deps.db, request.headers.get('authorization'));
      // The payment first: an unknown (or another tenant's) payment is 404, not an empty list.
      await readMerchantPayment(deps.db, tenant.tenantId, paymentId);
      const refunds = await listMerchantRefunds(deps.db, tenant.tenantId, paymentId);
      return Response.json({ paymentId, refunds }, { headers: { 'cache-control': 'no-store' } });
    });
}
