// Stops the launcher's processes when the launcher dies, however it dies (SIGKILL included):
// the launcher holds this process's stdin and writes one line per thing to stop as it starts
// it: a process-group id, or `dir <path>` for the processes working in that folder or below
// it (those that leave every group they were started in: PostgreSQL's postmaster and each
// backend call setsid, and Patroni starts its postmaster in a session of its own). When stdin
// closes without a `done` line, they are stopped newest first (apps before the database),
// SIGTERM (and SIGCONT, for a stopped one) then SIGKILL after a grace.
// Plain CommonJS so it starts in milliseconds without a TypeScript loader.
const { readdirSync, readlinkSync } = require('node:fs');

const GRACE_MS = 8_000;
const entries = [];
let done = false;
let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let newline = buffer.indexOf('\n');
  while (newline >= 0) {
    const line = buffer.slice(0, newline).trim();
    buffer = buffer.slice(newline + 1);
    if (line === 'done') done = true;
    else if (/^\d+$/.test(line)) entries.push({ pgid: Number(line) });
    else if (line.startsWith('dir /')) entries.push({ dir: line.slice(4) });
    newline = buffer.indexOf('\n');
  }
});
process.stdin.on('close', async () => {
  if (!done) {
    for (const entry of entries.reverse()) {
      if (entry.dir) await stopAll(() => workingIn(entry.dir));
      else await stopAll(() => [-entry.pgid]);
    }
  }
  process.exit(0);
});
process.on('SIGTERM', () => process.exit(0));

/** Processes whose working directory is `dir` or below it (Linux's /proc; none elsewhere). */
function workingIn(dir) {
  const found = [];
  let pids = [];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return found;
  }
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(Number(pid));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

function signal(targets, name) {
  for (const target of targets) {
    try {
      process.kill(target, name);
    } catch {}
  }
}

function alive(targets) {
  return targets.filter((target) => {
    try {
      process.kill(target, 0);
      return true;
    } catch {
      return false;
    }
  });
}

/** `find` again before each step: a stopping process may fork (a postmaster's shutdown). */
async function stopAll(find) {
  if (alive(find()).length === 0) return;
  signal(find(), 'SIGTERM');
  signal(find(), 'SIGCONT');
  for (let i = 0; i < GRACE_MS / 100 && alive(find()).length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  signal(find(), 'SIGKILL');
}
