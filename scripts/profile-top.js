#!/usr/bin/env node
// Summarises a V8 CPU profile (node --cpu-prof): self time by function and by file, and inclusive time by file.
//   node scripts/profile-top.js PROFILE.cpuprofile [--top 30] [--grep REGEX (inclusive time of matching functions)]
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/profile-top.js PROFILE.cpuprofile [--top N]');
  process.exit(2);
}
const ti = process.argv.indexOf('--top');
const TOP = ti > 0 ? Number(process.argv[ti + 1]) : 30;
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
// Sample counts weighted by their time deltas (µs).
const selfUs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const short = (url) => (url ? url.replace(/^file:\/\//, '').replace(/.*\/work\/[^/]+\//, '') : '(native)');
const fnKey = (n) =>
  `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const bySelfFn = new Map();
const bySelfFile = new Map();
const byInclFile = new Map();
const byInclFn = new Map();
for (const [id, us] of selfUs) {
  const n = byId.get(id);
  bySelfFn.set(fnKey(n), (bySelfFn.get(fnKey(n)) ?? 0) + us);
  bySelfFile.set(short(n.callFrame.url), (bySelfFile.get(short(n.callFrame.url)) ?? 0) + us);
  const seen = new Set();
  const seenFn = new Set();
  for (let p = id; p !== undefined; p = parent.get(p)) {
    const k = fnKey(byId.get(p));
    if (!seenFn.has(k)) {
      seenFn.add(k);
      byInclFn.set(k, (byInclFn.get(k) ?? 0) + us);
    }
    const f = short(byId.get(p).callFrame.url);
    if (seen.has(f)) continue;
    seen.add(f);
    byInclFile.set(f, (byInclFile.get(f) ?? 0) + us);
  }
}
const print = (title, m) => {
  console.log(`\n${title}\n| % | ms | where |\n|---|---|---|`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`| ${((100 * us) / total).toFixed(1)} | ${(us / 1000).toFixed(0)} | ${k} |`);
};
console.log(`profile: ${(total / 1000).toFixed(0)} ms sampled`);
print('self, by function', bySelfFn);
print('self, by file', bySelfFile);
print('inclusive, by file', byInclFile);
const gi = process.argv.indexOf('--grep');
if (gi > 0) {
  const re = new RegExp(process.argv[gi + 1]);
  print(`inclusive, functions matching ${re}`, new Map([...byInclFn].filter(([k]) => re.test(k))));
}
