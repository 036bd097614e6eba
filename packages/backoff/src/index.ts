export { type BackoffPolicy, equalJitterDelayMs, exponentialDelayMs } from './exponential-delay.ts';
