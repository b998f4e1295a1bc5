// tests/deploy/validate_k8s.mjs FILE.yaml... — checks Kubernetes manifests
// offline against the API schema, as far as a machine without a cluster can:
//  1. every document is typed against kubernetes-models (types generated from
//     the Kubernetes OpenAPI schema) by the TypeScript compiler: an unknown
//     field, a field of the wrong type or a missing required field is an
//     error naming the file, the document and the place;
//  2. every document passes the model's own JSON-schema validation (formats,
//     patterns, int32 ranges, enums the types cannot say).
// Prints "ok FILE: KIND NAME" per document; exits 1 naming each problem.
// What it cannot do: admission (quotas, policies, defaults), whether the
// image exists, or anything a running API server decides.
// Run by tests/deploy/test_deploy.c; packages pinned in package-lock.json
// (npm ci, tools/install-deps.sh).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: validate_k8s.mjs FILE.yaml...');
  process.exit(2);
}
const problems = [];
const docs = [];
for (const file of files) {
  const parsed = parseAllDocuments(readFileSync(file, 'utf8'));
  parsed.forEach((d, i) => {
    if (d.errors.length) { problems.push(`${file}: document ${i + 1}: ${d.errors[0].message}`); return; }
    const o = d.toJS();
    if (!o) return; // an empty document
    if (!o.apiVersion || !o.kind) { problems.push(`${file}: document ${i + 1}: no apiVersion or kind`); return; }
    docs.push({ file, index: i + 1, o, module: `kubernetes-models/${o.apiVersion}/${o.kind}` });
  });
}

// 2. The models' JSON-schema validation.
for (const d of docs) {
  let Model;
  try {
    Model = (await import(d.module))[d.o.kind];
  } catch {
    problems.push(`${d.file}: document ${d.index}: no model for ${d.o.apiVersion} ${d.o.kind}`);
    continue;
  }
  try {
    new Model(d.o).validate();
  } catch (e) {
    problems.push(`${d.file}: document ${d.index} (${d.o.kind} ${d.o.metadata?.name}): ${e.message}`);
  }
}

// 1. The types: one TypeScript file assigning each document, as an object
// literal, to its model's interface (excess property checks catch unknown
// fields at any depth).
const work = mkdtempSync(join(tmpdir(), 'joseki-k8s-'));
try {
  symlinkSync(join(here, 'node_modules'), join(work, 'node_modules'));
  let ts = '';
  const where = [];
  docs.forEach((d, i) => {
    ts += `import type { I${d.o.kind} as T${i} } from '${d.module}';\n`;
    const body = JSON.stringify(d.o, null, 1);
    where.push({ first: ts.split('\n').length + 1, lines: body.split('\n').length + 1, d });
    ts += `export const doc${i}: T${i} =\n${body};\n`;
  });
  writeFileSync(join(work, 'check.ts'), ts);
  try {
    execFileSync(process.execPath, [join(here, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict',
      '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck',
      join(work, 'check.ts')], { cwd: work, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    const out = String(e.stdout || '') + String(e.stderr || '');
    for (const line of out.split('\n').filter(Boolean)) {
      const m = /check\.ts\((\d+),\d+\): (.*)/.exec(line);
      const at = m && where.find(w => +m[1] >= w.first && +m[1] < w.first + w.lines);
      if (!at) { problems.push('tsc: ' + line); continue; }
      // The field: the last quoted key on the lines before the error.
      const src = ts.split('\n').slice(at.first - 1, +m[1]).join('\n');
      const keys = [...src.matchAll(/"([^"]+)":/g)].map(k => k[1]);
      problems.push(`${at.d.file}: document ${at.d.index} (${at.d.o.kind} ${at.d.o.metadata?.name}), near "${keys[keys.length - 1] || '?'}": ${m[2]}`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (problems.length) {
  for (const p of problems) console.error('FAIL ' + p);
  process.exit(1);
}
for (const d of docs) console.log(`ok ${d.file}: ${d.o.kind} ${d.o.metadata?.name} (apiVersion ${d.o.apiVersion})`);
