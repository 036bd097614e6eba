// @once/api/auth: who is calling, for routes outside the tRPC router.

export { type AuthenticatedTenant, authenticateApiKey } from './authenticate.ts';
export { CLIENT_ADDRESS_HEADER } from './client-address.ts';
