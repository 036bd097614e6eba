// `npx tsx bench/src/profile/guard-profile.ts [requests] [variant...]`: where the guard-cpu
// scenario's requests spend their CPU and their heap, in this process. For each variant (default
// all; picked by a part of its name): the top frames by self CPU time and the top allocation
// sites per request, also by the innermost library frame on their stack, and a flame graph SVG
// in the temp directory. Profilers slow what they measure: read shares and differences.
// Attribution is by stack: under tRPC the plugin is the first to read the body, so compare a
// guarded variant with 'tRPC + a no-op plugin', frame by frame.
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { guardCpuVariants } from '../scenarios/guard-cpu.ts';
import { sampleAllocations } from './allocated-bytes.ts';
import { type CpuProfile, flameGraphSvg, frameLabel } from './flamegraph.ts';

type CallFrame = CpuProfile['nodes'][number]['callFrame'];

const requests = Number(process.argv[2] ?? 5_000);
const picked = process.argv.slice(3);
const TOP = Number(process.env.TOP ?? 25);
/** The library's frames: what runs below one is attributed to it in the second tables. */
const LIBRARY = /packages\/idempotency\/|canonicalize\//;
const OUTSIDE = '(no library frame on the stack)';

/**
 * Amounts per frame label of a call tree given as `[frame, own amount, children]`: by the
 * frame itself, and by the innermost library frame on its stack.
 */
function tally<N>(root: N, read: (node: N) => [CallFrame, number, N[]]) {
  const self = new Map<string, number>();
  const byLibrary = new Map<string, number>();
  let total = 0;
  const stack: [N, string][] = [[root, OUTSIDE]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [frame, amount, children] = read(item[0]);
    const label = frameLabel(frame);
    const owner = LIBRARY.test(label) ? label : item[1];
    self.set(label, (self.get(label) ?? 0) + amount);
    byLibrary.set(owner, (byLibrary.get(owner) ?? 0) + amount);
    total += amount;
    for (const child of children) stack.push([child, owner]);
  }
  return { self, byLibrary, total };
}

function printTop(title: string, totals: Map<string, number>, scale: number) {
  console.log(`\n${title}`);
  for (const [label, amount] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`${(amount * scale).toFixed(1).padStart(9)} | ${label}`);
}

/** `STACKS=<regex>`: the call stacks (innermost 8 frames) of the allocation sites that match. */
function printStacks<N extends { callFrame: CallFrame; selfSize: number; children: N[] }>(
  root: N,
  site: RegExp,
) {
  const stacks = new Map<string, number>();
  const walk = (node: N, path: string[]) => {
    const here = [...path, frameLabel(node.callFrame)];
    if (node.selfSize > 0 && site.test(here.at(-1)!)) {
      const stack = here.slice(-8).reverse().join('\n    < ');
      stacks.set(stack, (stacks.get(stack) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(root, []);
  printTop(`allocation stacks of ${site}`, stacks, 1 / requests);
}

const session = new Session();
session.connect();
for (const [name, send] of guardCpuVariants()) {
  if (picked.length > 0 && !picked.some((part) => name.includes(part))) continue;
  for (let i = 0; i < 2_000; i++) await send();

  const heap = await sampleAllocations(send, requests);

  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  const started = process.cpuUsage();
  for (let i = 0; i < requests; i++) await send();
  const used = process.cpuUsage(started);
  const { profile } = await session.post('Profiler.stop');
  await session.post('Profiler.disable');
  const cpu = profile as CpuProfile;

  const perRequestUs = (used.user + used.system) / requests;
  console.log(`\n## ${name}: ${perRequestUs.toFixed(1)} µs CPU/request while profiled`);
  const byId = new Map(cpu.nodes.map((node) => [node.id, node]));
  const time = tally(cpu.nodes[0]!, (node) => [
    node.callFrame,
    node.hitCount ?? 0,
    (node.children ?? []).map((id) => byId.get(id)!),
  ]);
  const usPerSample = perRequestUs / time.total;
  printTop('self CPU µs/request | frame', time.self, usPerSample);
  printTop('CPU µs/request | innermost library frame', time.byLibrary, usPerSample);

  type HeapNode = { callFrame: CallFrame; selfSize: number; children: HeapNode[] };
  const bytes = tally(heap.head as HeapNode, (node) => [
    node.callFrame,
    node.selfSize,
    node.children,
  ]);
  printTop(
    `allocated B/request | site (all: ${Math.round(bytes.total / requests)} B)`,
    bytes.self,
    1 / requests,
  );
  printTop('allocated B/request | innermost library frame', bytes.byLibrary, 1 / requests);
  if (process.env.STACKS) printStacks(heap.head as HeapNode, new RegExp(process.env.STACKS));

  const file = path.join(os.tmpdir(), `guard-cpu-${name.replace(/\W+/g, '-')}.svg`);
  await writeFile(file, flameGraphSvg(cpu, `guard-cpu: ${name}`));
  console.log(`\nflame graph: ${file}`);
}
session.disconnect();
