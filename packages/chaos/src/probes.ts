/** The IETF preset's direct questions to the target, outside the fault proxy. */
type ProbeName = 'missing_key' | 'reused_key' | 'in_flight';

export interface ProbeAnswer {
  probe: ProbeName;
  key: string | null;
  /** The statuses of the request(s) that test the rule. */
  statuses: number[];
  answers: { status: number; contentType: string | null; body: string }[];
}

const IN_FLIGHT_PAIRS = 3;

/**
 * Asks the target the three IETF questions: a request without a key; a key sent again with
 * another body after its first request was answered; two requests with one new key at the
 * same moment (three times, each with a new key).
 */
export async function probeIetf(options: {
  url: string;
  path: string;
  keyPrefix: string;
  body: (variant: number) => unknown;
}): Promise<ProbeAnswer[]> {
  const send = async (key: string | null, body: unknown) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key !== null) headers['idempotency-key'] = key;
    const response = await fetch(`${options.url}${options.path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return {
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: await response.text(),
    };
  };

  const missing = await send(null, options.body(0));

  const reusedKey = `${options.keyPrefix}probe-reuse`;
  const first = await send(reusedKey, options.body(1));
  const reused = await send(reusedKey, options.body(2));

  // A race may be lost by chance: ask IN_FLIGHT_PAIRS times, with a new key each.
  const inFlight: ProbeAnswer[] = [];
  for (let i = 0; i < IN_FLIGHT_PAIRS; i++) {
    const key = `${options.keyPrefix}probe-in-flight-${i}`;
    const pair = await Promise.all([
      send(key, options.body(3 + i)),
      send(key, options.body(3 + i)),
    ]);
    inFlight.push({ probe: 'in_flight', key, statuses: pair.map((a) => a.status), answers: pair });
  }
  return [
    { probe: 'missing_key', key: null, statuses: [missing.status], answers: [missing] },
    { probe: 'reused_key', key: reusedKey, statuses: [reused.status], answers: [first, reused] },
    ...inFlight,
  ];
}
