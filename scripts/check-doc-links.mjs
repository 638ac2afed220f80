// Checks that every relative link of the repository's Markdown files resolves: `](path)` to a file
// or folder that exists, `](path#anchor)` and `](#anchor)` to a heading of that Markdown file (as
// GitHub makes its anchors), `](file#L42)` to a line the file has. Links to other sites are not
// fetched. Prints each broken link as file:line and exits 1 if there is any.
//
//   node scripts/check-doc-links.mjs [file.md …]     (default: every .md of the repository)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', '.git', '.data', '.turbo', 'coverage']);

function markdownFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...markdownFiles(full));
    else if (entry.name.endsWith('.md')) found.push(full);
  }
  return found;
}

/** The lines of a Markdown file outside fenced code blocks, with their numbers. */
function proseLines(text) {
  const lines = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      return;
    }
    if (fence === null) lines.push({ line, number: i + 1 });
  });
  return lines;
}

/** GitHub's anchor for a heading: its text without formatting, lower-cased, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
}

const anchorCache = new Map();
function anchorsOf(file) {
  let anchors = anchorCache.get(file);
  if (!anchors) {
    anchors = new Set();
    const seen = new Map();
    for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
      const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
      if (heading === undefined) continue;
      const base = slug(heading);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    anchorCache.set(file, anchors);
  }
  return anchors;
}

function problem(from, target) {
  const hash = target.indexOf('#');
  const pathPart = decodeURI(hash === -1 ? target : target.slice(0, hash));
  const anchor = hash === -1 ? undefined : target.slice(hash + 1);
  const file = pathPart === '' ? from : path.resolve(path.dirname(from), pathPart);
  if (!file.startsWith(root)) return 'points outside the repository';
  if (!existsSync(file)) return 'no such file';
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(file).isDirectory()) return 'an anchor on a folder';
  const line = /^L(\d+)(?:-L\d+)?$/.exec(anchor);
  if (line && !file.endsWith('.md')) {
    const lines = readFileSync(file, 'utf8').split('\n').length;
    return Number(line[1]) <= lines ? undefined : `the file has ${lines} lines`;
  }
  if (!file.endsWith('.md')) return 'an anchor in a file that is not Markdown';
  return anchorsOf(file).has(decodeURIComponent(anchor)) ? undefined : 'no such heading';
}

const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => path.resolve(f)) : markdownFiles(root);
let broken = 0;
let checked = 0;
for (const file of files) {
  for (const { line, number } of proseLines(readFileSync(file, 'utf8'))) {
    // Inline code holds no link: `](…)` there is text.
    const prose = line.replace(/(`+)[^`]*?\1/g, '');
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      checked += 1;
      const why = problem(file, target);
      if (why) {
        broken += 1;
        console.log(`${path.relative(root, file)}:${number}: ${target} (${why})`);
      }
    }
  }
}
console.log(`${checked} relative links in ${files.length} Markdown files, ${broken} broken`);
process.exit(broken > 0 ? 1 : 0);
