// A launcher for supervisor.test.ts: starts two long-running children, prints their pids,
// then waits to be killed.
import { Supervisor } from '../supervisor.ts';

const supervisor = new Supervisor(() => {});
const pids: number[] = [];
for (const name of ['first', 'second']) {
  const child = await supervisor.start({
    name,
    command: process.execPath,
    args: ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'],
    readyLine: /^ready$/,
  });
  pids.push(child.child.pid!);
}
console.log(`PIDS ${pids.join(' ')}`);
setInterval(() => {}, 1000);
