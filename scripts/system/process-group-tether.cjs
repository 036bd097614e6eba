// Stops the launcher's process groups when the launcher dies, however it dies (SIGKILL
// included): the launcher holds this process's stdin and writes one process-group id per
// line as it starts each part; when stdin closes without a `done` line, the groups are
// stopped newest first (apps before the database), SIGTERM then SIGKILL after a grace.
// Plain CommonJS so it starts in milliseconds without a TypeScript loader.
const groups = [];
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
    else if (/^\d+$/.test(line)) groups.push(Number(line));
    newline = buffer.indexOf('\n');
  }
});
process.stdin.on('close', async () => {
  if (!done) {
    for (const pgid of groups.reverse()) await stopGroup(pgid);
  }
  process.exit(0);
});
process.on('SIGTERM', () => process.exit(0));

function alive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopGroup(pgid) {
  if (!alive(pgid)) return;
  try {
    process.kill(-pgid, 'SIGTERM');
  } catch {}
  for (let i = 0; i < 80 && alive(pgid); i++) await new Promise((r) => setTimeout(r, 100));
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {}
}
