// Stops a postmaster when the process that started it dies (see embedded-postgres.ts).
// Plain CommonJS so it starts in milliseconds without a TypeScript loader.
const pid = Number(process.argv[2]);
process.stdin.resume();
process.stdin.on('close', () => {
  try {
    process.kill(pid, 'SIGINT');
  } catch {}
  process.exit(0);
});
process.on('SIGTERM', () => process.exit(0));
