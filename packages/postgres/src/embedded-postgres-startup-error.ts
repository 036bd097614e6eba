/**
 * A start-up failure the person starting PostgreSQL can fix: its message is ONE line that
 * says what is wrong and what to do. Launchers print the message alone, never a stack trace.
 *
 * @example
 * throw new PostgresStartupError('port 25432 on 127.0.0.1 is already in use: stop whatever holds it');
 */
export class PostgresStartupError extends Error {
  override readonly name = 'PostgresStartupError';

  constructor(message: string) {
    super(message.replace(/\s*\n\s*/g, ' '));
  }
}

/**
 * The line an embedded PostgreSQL process prints before exiting when it cannot start;
 * `spawnEmbeddedPostgres` and the launcher's supervisor turn it back into the error message.
 */
export const POSTGRES_FAILED_PREFIX = 'POSTGRES_FAILED ';
