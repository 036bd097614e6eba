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
import {
  type CallFrame,
  type CpuProfile,
  flameGraphSvg,
  frameLabel,
  tally,
  tallyCpu,
} from './flamegraph.ts';

const requests = Number(process.argv[2] ?? 5_000);
const picked = process.argv.slice(3);
const TOP = Number(process.env.TOP ?? 25);
/** The library's frames: what runs below one is attributed to it in the second tables. */
const LIBRARY = /packages\/idempotency\/|canonicalize\//;

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
  const time = tallyCpu(cpu, LIBRARY);
  const usPerSample = perRequestUs / time.total;
  printTop('self CPU µs/request | frame', time.self, usPerSample);
  printTop('CPU µs/request | innermost library frame', time.byOwner, usPerSample);

  type HeapNode = { callFrame: CallFrame; selfSize: number; children: HeapNode[] };
  const bytes = tally(
    heap.head as HeapNode,
    (node) => [node.callFrame, node.selfSize, node.children],
    LIBRARY,
  );
  printTop(
    `allocated B/request | site (all: ${Math.round(bytes.total / requests)} B)`,
    bytes.self,
    1 / requests,
  );
  printTop('allocated B/request | innermost library frame', bytes.byOwner, 1 / requests);
  if (process.env.STACKS) printStacks(heap.head as HeapNode, new RegExp(process.env.STACKS));

  const file = path.join(os.tmpdir(), `guard-cpu-${name.replace(/\W+/g, '-')}.svg`);
  await writeFile(file, flameGraphSvg(cpu, `guard-cpu: ${name}`));
  console.log(`\nflame graph: ${file}`);
}
session.disconnect();
