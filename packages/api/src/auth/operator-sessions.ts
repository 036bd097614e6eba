import { type OperatorSessionCredential, operatorSessions } from '@once/db/schema';
import { isTransientDatabaseError } from '@once/postgres';
import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Database } from '../database.ts';
import { newSessionId, SESSION_TTL_SECONDS } from './session-cookie.ts';

/** What an open operator session proves. */
export interface OperatorSession {
  tenantId: string;
  id: string;
  credential: OperatorSessionCredential;
  expiresAt: Date;
}

interface Confirmed {
  session: OperatorSession;
  /** When the database last said this session is open (ms). */
  confirmedAt: number;
}

/** Rows ended or expired this long ago are deleted when the tenant's next session opens. */
const KEEP_CLOSED_ROWS_MS = 24 * 60 * 60 * 1000;

/** Sessions remembered for an outage; the least recently confirmed are forgotten first. */
const MAX_CONFIRMED = 10_000;

class ReadDeadline extends Error {}

/**
 * The server's record of operator sessions (`operator_sessions`): a session is open while its
 * row is neither ended (sign-out, the API key that opened it rotated) nor expired
 * ({@link SESSION_TTL_SECONDS}, 8 h), and every request of an operator cookie reads the row, so
 * an ended session is refused at once, on every web process.
 *
 * One exception, asked for with `orFromMemory` by what needs no database (the cockpit's parts
 * and chaos switches, so it can still show a database that is down or failing over): when the
 * row cannot be read (a transient database error twice in a row, or no answer within
 * `readDeadlineMs`), a session this process confirmed open within the last `outageGraceMs` is
 * answered from that confirmation. A sign-out on this process forgets it at once; an ending
 * written on another process is not seen until the database answers, so nothing that acts on
 * money or keys may accept such an answer.
 */
export class OperatorSessions {
  readonly #confirmed = new Map<string, Confirmed>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly options: { readDeadlineMs: number; outageGraceMs: number } = {
      readDeadlineMs: 1_500,
      outageGraceMs: 10 * 60_000,
    },
  ) {}

  /** Opens a session; an API-key session names the key's SHA-256, so its rotation ends it. */
  async open(input: {
    tenantId: string;
    credential: OperatorSessionCredential;
    apiKeySha256?: string;
  }): Promise<OperatorSession> {
    const now = this.clock.now();
    const session: OperatorSession = {
      tenantId: input.tenantId,
      id: newSessionId(),
      credential: input.credential,
      expiresAt: new Date(now.getTime() + SESSION_TTL_SECONDS.operator * 1000),
    };
    await this.db.transaction(async (tx) => {
      await tx
        .delete(operatorSessions)
        .where(
          and(
            eq(operatorSessions.tenantId, input.tenantId),
            lt(operatorSessions.expiresAt, new Date(now.getTime() - KEEP_CLOSED_ROWS_MS)),
          ),
        );
      await tx.insert(operatorSessions).values({
        ...session,
        apiKeySha256: input.credential === 'api_key' ? input.apiKeySha256 : null,
        createdAt: now,
      });
    });
    this.#remember(session, now.getTime());
    return session;
  }

  /**
   * The open session `id` of `tenantId`, or undefined (ended, expired, never opened), as the
   * database says; `orFromMemory`: as this process last confirmed it, if the database cannot say.
   */
  async find(
    tenantId: string,
    id: string,
    { orFromMemory = false }: { orFromMemory?: boolean } = {},
  ): Promise<OperatorSession | undefined> {
    // One lost connection (a cut, a pooler's hiccup) is no outage: read once more before
    // answering from memory, or a session ended on another web passes while the database answers.
    const read = this.#read(tenantId, id).catch((error: unknown) => {
      if (!isTransientDatabaseError(error)) throw error;
      return this.#read(tenantId, id);
    });
    const key = keyOf(tenantId, id);
    if (!orFromMemory || !this.#confirmed.has(key)) return read;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ReadDeadline()), this.options.readDeadlineMs);
    });
    try {
      return await Promise.race([read, deadline]);
    } catch (error) {
      if (!(error instanceof ReadDeadline) && !isTransientDatabaseError(error)) throw error;
      // A read given up on may still fail later: nobody waits for it any more.
      read.catch(() => {});
      const nowMs = this.clock.now().getTime();
      const stillKnown = this.#confirmed.get(key);
      if (
        !stillKnown ||
        nowMs - stillKnown.confirmedAt > this.options.outageGraceMs ||
        stillKnown.session.expiresAt.getTime() <= nowMs
      ) {
        throw error instanceof ReadDeadline ? new Error('the database did not answer') : error;
      }
      return stillKnown.session;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the session (sign-out): refused from now on, here at once and on every process. */
  async end(tenantId: string, id: string): Promise<void> {
    this.#confirmed.delete(keyOf(tenantId, id));
    await this.db
      .update(operatorSessions)
      .set({ endedAt: this.clock.now() })
      .where(
        and(
          eq(operatorSessions.tenantId, tenantId),
          eq(operatorSessions.id, id),
          isNull(operatorSessions.endedAt),
        ),
      );
  }

  async #read(tenantId: string, id: string): Promise<OperatorSession | undefined> {
    const now = this.clock.now();
    const [row] = await this.db
      .select({
        tenantId: operatorSessions.tenantId,
        id: operatorSessions.id,
        credential: operatorSessions.credential,
        expiresAt: operatorSessions.expiresAt,
      })
      .from(operatorSessions)
      .where(
        and(
          eq(operatorSessions.tenantId, tenantId),
          eq(operatorSessions.id, id),
          isNull(operatorSessions.endedAt),
          gt(operatorSessions.expiresAt, now),
        ),
      )
      .limit(1);
    const key = keyOf(tenantId, id);
    if (row) this.#remember(row, now.getTime());
    else this.#confirmed.delete(key);
    return row;
  }

  /** Bounded: past `MAX_CONFIRMED`, expired sessions go first, then the oldest confirmations. */
  #remember(session: OperatorSession, nowMs: number) {
    const key = keyOf(session.tenantId, session.id);
    this.#confirmed.delete(key);
    this.#confirmed.set(key, { session, confirmedAt: nowMs });
    if (this.#confirmed.size <= MAX_CONFIRMED) return;
    for (const [known, { session: s }] of this.#confirmed) {
      if (s.expiresAt.getTime() <= nowMs) this.#confirmed.delete(known);
    }
    for (const known of this.#confirmed.keys()) {
      if (this.#confirmed.size <= MAX_CONFIRMED) break;
      this.#confirmed.delete(known);
    }
  }
}

const keyOf = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
