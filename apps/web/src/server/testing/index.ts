// What tests outside the app (the root's test/) use to run the web's API without Next: its
// runtime, its routes served over HTTP (in this process or another), the OpenAPI contract
// check, the processor webhook, and the demo's chaos switchboard as the web process builds it.
export { createHttpChaosSwitchboard } from '../../demo/http-chaos-switchboard.ts';
export { processorClientsFrom } from '../processor-clients.ts';
export { createProcessorWebhookHandler } from '../processor-webhook.ts';
export { startWebRuntime, type WebRuntime } from '../runtime.ts';
export { type ObservedResponse, openApiViolations } from './openapi-contract.ts';
export { type ServedHandler, serveFetch } from './serve-fetch.ts';
export { webApiRoutes } from './web-routes.ts';
export { startWebTestProcess } from './web-test-process.ts';
export { startWebTestServer, type WebTestServer } from './web-test-server.ts';
