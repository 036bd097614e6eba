// Statement-writing helpers with no schema, for drizzle's `sql`: durations by the database
// clock, literal lists, and one runner for both drivers. The app's packages and the mock
// processor (a third party with its own database) share them.
export { sqlLiteralList } from './literal-list.ts';
export { msInterval } from './ms-interval.ts';
export { runStatement, type SqlRunner } from './run-statement.ts';
