// kubernetes-models' validate() accepts unknown fields (`replica: 2` passes), and the API server
// would silently drop them. This walks a rendered object alongside the models' type declarations
// (each `.d.ts` lists the fields of one Kubernetes type) and reports every field the type lacks.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot } from './chart.js';

type TypeRef = { readonly kind: 'leaf' } | { readonly kind: 'ref'; readonly file: string } | { readonly kind: 'array' | 'map'; readonly of: TypeRef };
const LEAF: TypeRef = { kind: 'leaf' };
const modules = join(repoRoot, 'node_modules');
const parsed = new Map<string, Map<string, TypeRef> | null>();

function resolveModule(from: string, specifier: string): string {
  return specifier.startsWith('.') ? join(dirname(from), specifier.replace(/\.js$/, '.d.ts')) : join(modules, `${specifier}.d.ts`);
}

function parseType(expr: string, imports: Map<string, string>): TypeRef {
  const array = /^Array<(.+)>$/.exec(expr);
  if (array) return { kind: 'array', of: parseType(array[1] ?? '', imports) };
  const file = imports.get(expr);
  return file ? { kind: 'ref', file } : LEAF;
}

/** Fields of the interface declared in `file`, or null for aliases of scalars (Quantity, Time, IntOrString). */
function fieldsOf(file: string): Map<string, TypeRef> | null {
  const cached = parsed.get(file);
  if (cached !== undefined) return cached;
  const text = readFileSync(file, 'utf8');
  const imports = new Map([...text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)].map((m) => [m[1] ?? '', resolveModule(file, m[2] ?? '')]));
  const body = /^export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)^\}/m.exec(text)?.[1];
  let fields: Map<string, TypeRef> | null = null;
  if (body !== undefined) {
    fields = new Map();
    const lines = body.split('\n').filter((l) => !/^\s*(\/\*\*|\*)/.test(l));
    lines.forEach((line, i) => {
      const prop = /^ {4}"([^"]+)"\??: (.*?);?$/.exec(line);
      if (!prop) return;
      const [, name = '', type = ''] = prop;
      if (type === '{') {
        const value = /^ {8}\[key: string\]: (.+);$/.exec(lines[i + 1] ?? '')?.[1];
        fields?.set(name, value === undefined ? LEAF : { kind: 'map', of: parseType(value, imports) });
      } else {
        fields?.set(name, parseType(type, imports));
      }
    });
  }
  parsed.set(file, fields);
  return fields;
}

function walk(value: unknown, type: TypeRef, path: string, problems: string[]): void {
  if (value === null || typeof value !== 'object') return;
  if (type.kind === 'array' && Array.isArray(value)) value.forEach((v, i) => walk(v, type.of, `${path}[${i}]`, problems));
  if (type.kind === 'map') for (const [k, v] of Object.entries(value)) walk(v, type.of, `${path}.${k}`, problems);
  if (type.kind !== 'ref' || Array.isArray(value)) return;
  const fields = fieldsOf(type.file);
  if (!fields) return;
  for (const [k, v] of Object.entries(value)) {
    const field = fields.get(k);
    if (field) walk(v, field, `${path}.${k}`, problems);
    else problems.push(`${path}.${k}`);
  }
}

/**
 * Paths of fields unknown to the object's Kubernetes type, e.g. ["spec.replica"]. Kinds outside
 * kubernetes-models (Prometheus Operator CRDs) return null: their declarations are not per-type files.
 */
export function unknownFields(object: { apiVersion: string; kind: string }): string[] | null {
  const file = join(modules, 'kubernetes-models', object.apiVersion, `${object.kind}.d.ts`);
  if (!existsSync(file)) return null;
  const problems: string[] = [];
  walk(object, { kind: 'ref', file }, object.kind, problems);
  return problems;
}
