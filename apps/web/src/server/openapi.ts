import openApiDocument from '../../openapi/payments.json' with { type: 'json' };

/**
 * `GET /api/openapi`: the OpenAPI 3.1 description of the REST API (`openapi/payments.json`),
 * public, cacheable for a minute. Tests check real responses against this same document.
 */
export function createOpenApiHandler() {
  const body = JSON.stringify(openApiDocument);
  return async (): Promise<Response> =>
    new Response(body, {
      headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=60' },
    });
}

export { openApiDocument };
