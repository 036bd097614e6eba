/** Where the processor's one webhook endpoint is and how its events are signed. */
export interface WebhookTarget {
  url: string;
  secret: string;
}

/** Per-attempt HTTP timeout. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** After this many failed attempts an event is left undelivered: `failed` in /admin. */
export const WEBHOOK_MAX_ATTEMPTS = 30;
