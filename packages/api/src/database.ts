import type { Database } from '@once/db';

/** A transaction of the application database, as drizzle hands it to `db.transaction`. */
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** Something both a database and a transaction can do: run queries. */
export type Queryable = Database | Transaction;

export type { Database };
