// What tests outside the app (the root's test/) use to run the worker as a real process and
// wait for the payments it settles.
export { ledgerChargesFor, waitForTerminal } from './convergence.ts';
export { createInProcessWorker, type InProcessWorker } from './in-process-worker.ts';
export { type RunningProcess, startWorkerProcess } from './processes.ts';
