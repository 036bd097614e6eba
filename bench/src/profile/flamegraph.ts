// Turns a V8 `.cpuprofile` (from `node --cpu-prof`) into a self-contained SVG flame graph and a
// self-time summary, without a profiler dependency: the format is a tree of call frames with
// sample counts, which is all a flame graph needs.

/** The subset of the V8 CPU profile format this file reads. */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    hitCount?: number;
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
}

export type CallFrame = CpuProfile['nodes'][number]['callFrame'];

interface Frame {
  name: string;
  self: number;
  total: number;
  children: Map<string, Frame>;
}

/** A short, stable label for a frame: function and the file it lives in (repo-relative). */
export function frameLabel(frame: CallFrame): string {
  const fn = frame.functionName || '(anonymous)';
  if (!frame.url) return fn;
  const url = frame.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('node_modules/');
  const file =
    nm >= 0
      ? url.slice(nm + 'node_modules/'.length)
      : url.replace(/^.*?\/(packages|bench|apps)\//, '$1/').replace(/^node:/, 'node:');
  return `${fn} ${file}:${frame.lineNumber + 1}`;
}

/** Merges identical stacks (same labels from the root) into one tree of sample counts. */
function buildTree(profile: CpuProfile): Frame {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const root: Frame = { name: 'all', self: 0, total: 0, children: new Map() };
  const walk = (id: number, parent: Frame) => {
    const node = byId.get(id)!;
    const name = frameLabel(node.callFrame);
    let frame = parent.children.get(name);
    if (!frame) {
      frame = { name, self: 0, total: 0, children: new Map() };
      parent.children.set(name, frame);
    }
    frame.self += node.hitCount ?? 0;
    for (const child of node.children ?? []) walk(child, frame);
  };
  for (const child of profile.nodes[0]!.children ?? []) walk(child, root);
  const sum = (frame: Frame): number => {
    frame.total = frame.self;
    for (const child of frame.children.values()) frame.total += sum(child);
    return frame.total;
  };
  sum(root);
  return root;
}

/**
 * Amounts per frame label of a call tree given as `[frame, own amount, children]`: by the
 * frame itself, and by the innermost frame on its stack whose label matches `owner`.
 */
export function tally<N>(root: N, read: (node: N) => [CallFrame, number, N[]], owner?: RegExp) {
  const self = new Map<string, number>();
  const byOwner = new Map<string, number>();
  let total = 0;
  const stack: [N, string][] = [[root, '(no library frame on the stack)']];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [frame, amount, children] = read(item[0]);
    const label = frameLabel(frame);
    const ownedBy = owner?.test(label) ? label : item[1];
    self.set(label, (self.get(label) ?? 0) + amount);
    byOwner.set(ownedBy, (byOwner.get(ownedBy) ?? 0) + amount);
    total += amount;
    for (const child of children) stack.push([child, ownedBy]);
  }
  return { self, byOwner, total };
}

/** `tally` of a CPU profile's samples. */
export function tallyCpu(profile: CpuProfile, owner?: RegExp) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  return tally(
    profile.nodes[0]!,
    (node) => [
      node.callFrame,
      node.hitCount ?? 0,
      (node.children ?? []).map((id) => byId.get(id)!),
    ],
    owner,
  );
}

/** Total (inclusive) samples of every frame whose label matches, counted once per stack. */
export function inclusiveShare(profile: CpuProfile, match: RegExp): number {
  const root = buildTree(profile);
  const count = (frame: Frame): number =>
    match.test(frame.name)
      ? frame.total
      : [...frame.children.values()].reduce((n, child) => n + count(child), 0);
  return root.total ? count(root) / root.total : 0;
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function colour(name: string): string {
  if (name.includes('packages/idempotency')) return 'rgb(230,120,40)';
  if (name.includes('drizzle-orm') || name.includes('postgres/')) return 'rgb(70,140,220)';
  if (name.includes('@trpc')) return 'rgb(150,100,200)';
  if (name.startsWith('(garbage collector)')) return 'rgb(200,60,60)';
  if (name.includes('bench/')) return 'rgb(80,170,90)';
  return 'rgb(200,190,120)';
}

/** A self-contained SVG flame graph of a CPU profile. */
export function flameGraphSvg(profile: CpuProfile, title: string, width = 1600): string {
  const root = buildTree(profile);
  const rowHeight = 16;
  const widthOf = (frame: Frame) => (frame.total / root.total) * width;
  const byName = (frame: Frame) =>
    [...frame.children.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  // The root sits at the bottom, as flame graphs do: the height first, then each row's y.
  const depthOf = (frame: Frame): number =>
    Math.max(
      0,
      ...byName(frame)
        .filter((c) => widthOf(c) >= 0.3)
        .map((c) => 1 + depthOf(c)),
    );
  const height = (depthOf(root) + 1) * rowHeight + 40;
  const rects: string[] = [];
  const draw = (frame: Frame, x: number, depth: number) => {
    const w = widthOf(frame);
    if (w < 0.3) return;
    const y = height - 20 - (depth + 1) * rowHeight;
    const share = ((frame.total / root.total) * 100).toFixed(2);
    const label = w > 40 ? escapeXml(frame.name).slice(0, Math.floor(w / 6.5)) : '';
    rects.push(
      `<g><title>${escapeXml(frame.name)} (${share}%)</title><rect x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${rowHeight - 1}" fill="${colour(frame.name)}"/>` +
        (label ? `<text x="${(x + 3).toFixed(2)}" y="${y + rowHeight - 4}">${label}</text>` : '') +
        '</g>',
    );
    let childX = x;
    for (const child of byName(frame)) {
      draw(child, childX, depth + 1);
      childX += widthOf(child);
    }
  };
  draw(root, 0, 0);
  const body = rects.join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="11" role="img" aria-label="${escapeXml(`CPU flame graph: ${title}`)}">
<title>${escapeXml(`CPU flame graph: ${title}`)}</title>
<rect width="100%" height="100%" fill="white"/>
<text x="4" y="14" font-size="13">${escapeXml(title)}: ${root.total} samples; hover a box for its share. orange = @once/idempotency, blue = drizzle/postgres.js, purple = tRPC, green = bench app</text>
${body}
</svg>
`;
}
