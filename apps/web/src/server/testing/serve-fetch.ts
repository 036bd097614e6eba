import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedHandler {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves a web-standard `(Request) => Response` handler on a real `node:http` server on
 * 127.0.0.1 (random port), so tests go through real sockets, headers, status lines and a
 * client's hang-up (`request.signal`).
 */
export async function serveFetch(
  handler: (request: Request) => Promise<Response>,
): Promise<ServedHandler> {
  const server = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined) continue;
        for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
      }
      const { port } = server.address() as AddressInfo;
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      // A client that goes away before its answer aborts the request, as Next.js route handlers see it.
      const gone = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) gone.abort();
      });
      const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
        method: req.method,
        headers,
        signal: gone.signal,
        ...(hasBody ? { body: Buffer.concat(chunks) } : {}),
      });
      const response = await handler(request);
      const out: Record<string, string | string[]> = {};
      response.headers.forEach((value, name) => {
        if (name !== 'set-cookie') out[name] = value;
      });
      const cookies = response.headers.getSetCookie();
      if (cookies.length > 0) out['set-cookie'] = cookies;
      res.writeHead(response.status, out);
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(error instanceof Error ? error.stack : String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
