/** One request with fetch (not for load: for priming keys and re-sending batches). */
async function sendPay(url: string, body: string, key: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Sends one request per key with bounded concurrency, retrying 5xx and connection errors (a
 * store that is restarting) until `deadlineMs`. Returns the final status per key.
 */
export async function sendAll(
  url: string,
  body: string,
  keys: readonly string[],
  options: { concurrency?: number; retryUntilMs?: number } = {},
): Promise<Map<string, number>> {
  const statuses = new Map<string, number>();
  const queue = [...keys];
  const deadline = Date.now() + (options.retryUntilMs ?? 0);
  await Promise.all(
    Array.from({ length: options.concurrency ?? 10 }, async () => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        for (;;) {
          const status = await sendPay(url, body, key).catch(() => 0);
          statuses.set(key, status);
          if ((status !== 0 && status < 500) || Date.now() >= deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    }),
  );
  return statuses;
}
