import type postgres from 'postgres';

/** A pool or an open transaction: the statements here run the same on either. */
export type Queryable = postgres.Sql | postgres.TransactionSql;
