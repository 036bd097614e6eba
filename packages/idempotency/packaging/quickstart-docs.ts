import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packageDir } from './build-and-pack.ts';

/** A file a quickstart shows: a fenced block whose info string names it (```ts file=server.ts). */
interface QuickstartFile {
  file: string;
  code: string;
}

/** One `docs/quickstart-<name>.md`: its files and the output its client is shown to print. */
export interface Quickstart {
  name: string;
  files: QuickstartFile[];
  output: string | undefined;
  /** Each output block, by the file shown last before it. */
  outputs: Record<string, string>;
}

const FENCE = /^```(\S+)([^\n]*)\n([\s\S]*?)^```$/gm;

/** The files a Markdown page shows, and the output it says its client prints. */
function shownIn(markdown: string): Omit<Quickstart, 'name'> {
  const files: QuickstartFile[] = [];
  let output: string | undefined;
  const outputs: Record<string, string> = {};
  for (const [, , info = '', code = ''] of markdown.matchAll(FENCE)) {
    const file = /\bfile=(\S+)/.exec(info)?.[1];
    if (file) files.push({ file, code });
    if (!/\boutput\b/.test(info)) continue;
    output = code;
    const last = files.at(-1);
    if (last) outputs[last.file] = code;
  }
  return { files, output, outputs };
}

/** Reads every quickstart page; the code run by the tests is the code the pages show. */
export function readQuickstarts(): Quickstart[] {
  const docs = path.join(packageDir, 'docs');
  return readdirSync(docs)
    .filter((f) => /^quickstart-.+\.md$/.test(f))
    .map((f) => ({
      name: f.replace(/^quickstart-|\.md$/g, ''),
      ...shownIn(readFileSync(path.join(docs, f), 'utf8')),
    }));
}

/** What the README shows: its smallest example (`file=example.ts`), and the files it runs with their outputs. */
export function readReadme() {
  const { files, outputs } = shownIn(readFileSync(path.join(packageDir, 'README.md'), 'utf8'));
  const code = (file: string) => {
    const found = files.find((f) => f.file === file);
    if (!found) throw new Error(`README.md shows no \`\`\`ts file=${file} block`);
    return found.code;
  };
  return {
    example: code('example.ts'),
    completer: code('completer.ts'),
    atRest: code('at-rest.ts'),
    outputs,
  };
}

/** The compiler settings of a fresh app (bundler resolution, as Next.js and tsx read imports). */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2023',
    lib: ['ES2023', 'DOM'],
    module: 'ESNext',
    moduleResolution: 'Bundler',
    jsx: 'react-jsx',
    moduleDetection: 'force',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  },
};

/** Writes each quickstart's files under `dir/<name>/` with one tsconfig.json for all of them. */
export async function writeQuickstarts(
  dir: string,
  quickstarts: { name: string; files: QuickstartFile[] }[],
): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  for (const { name, files } of quickstarts) await writeApp(path.join(dir, name), files);
}

/** Writes a page's files into `dir` as they are, and nothing else (no tsconfig of ours). */
export async function writeApp(dir: string, files: QuickstartFile[]): Promise<void> {
  for (const { file, code } of files) {
    const target = path.join(dir, file);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, code);
  }
}
