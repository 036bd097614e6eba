-- The apps' limits (session starts, operator codes) now count in idempotency_rate_limits, timed by the database's clock under the row lock; their rows are not carried over (each address, tenant and browser starts with its whole allowance once).
DROP TABLE "rate_limits" CASCADE;
