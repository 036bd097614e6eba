import { operationWords, type TimelineEventData } from './timeline-model.ts';

/** One request an idempotency key answered. */
interface KeyRequest {
  seq: number;
  at: string;
  /** `executed`, `replayed`, or the refusal's code (`idempotency_key_in_use`, ...). */
  answer: string;
}

/** Every request one key answered on this payment, oldest first. */
export interface KeyStory {
  key: string;
  /** `pay`, `capture`, `void`, `refund`. */
  action: string;
  requests: KeyRequest[];
}

/**
 * The timeline's attempts grouped by idempotency key, so a key's first execution, its replays
 * and its 409s and 422s read together.
 */
export function keyStoriesOf(events: readonly TimelineEventData[]): KeyStory[] {
  const stories = new Map<string, KeyStory>();
  for (const event of events) {
    const d = event.detail;
    if (typeof d.key !== 'string') continue;
    let action: string;
    let answer: string;
    if (event.kind === 'pay.attempt') {
      action = 'pay';
      // A refusal of the key names its code; otherwise the attempt ran or was replayed.
      answer =
        typeof d.answer === 'string' ? d.answer : d.replayed === true ? 'replayed' : 'executed';
    } else if (event.kind === 'operator.attempt') {
      action = operationWords(d.operation);
      answer = String(d.answer);
    } else {
      continue;
    }
    const story = stories.get(d.key) ?? { key: d.key, action, requests: [] };
    story.requests.push({ seq: event.seq, at: event.at, answer });
    stories.set(d.key, story);
  }
  for (const story of stories.values()) story.requests = executionBeforeItsReplays(story.requests);
  return [...stories.values()];
}

/**
 * A replay is told after the execution it answers with: a duplicate that read the committed key
 * may be written before the executing request handled its own COMMIT's reply. Everything else
 * keeps the order it was written in.
 */
function executionBeforeItsReplays(requests: KeyRequest[]): KeyRequest[] {
  const first = requests.findIndex((r) => r.answer === 'executed');
  const early = requests.slice(0, Math.max(0, first)).filter((r) => r.answer === 'replayed');
  if (early.length === 0) return requests;
  return [
    ...requests.slice(0, first).filter((r) => r.answer !== 'replayed'),
    requests[first]!,
    ...early,
    ...requests.slice(first + 1),
  ];
}
