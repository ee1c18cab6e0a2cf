// values.schema.json (draft-07) must accept every shipped value set and reject typos and wrong
// types, both in ajv and where it matters, in Helm itself; the chart README must list every value.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { parse, stringify } from 'yaml';
import { chartDir, ensureHelm, helm } from './support/chart.js';

type Values = Record<string, unknown>;
const isObject = (v: unknown): v is Values => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Helm's coalescing: maps merge key by key, everything else is replaced. */
function merge(base: Values, override: Values): Values {
  const out: Values = { ...base };
  for (const [k, v] of Object.entries(override)) out[k] = isObject(v) && isObject(base[k]) ? merge(base[k], v) : v;
  return out;
}

const readValues = (file: string): Values => (parse(readFileSync(join(chartDir, file), 'utf8')) as Values | null) ?? {};
const defaults = readValues('values.yaml');
const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as Record<string, unknown>;
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

const MISSPELLED: Values = { services: { readApi: { replicas: 3 } } };
const WRONG_TYPE: Values = { services: { mcpGateway: { replicaCount: 'three' } } };

describe('values.schema.json', () => {
  it('is draft-07 and closed on the chart’s own objects', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(schema.additionalProperties).toBe(false);
  });

  it.each(['values.yaml', 'values-dev.yaml', ...readdirSync(join(chartDir, 'ci')).map((f) => `ci/${f}`)])('accepts %s', (file) => {
    const valid = validate(merge(defaults, readValues(file)));
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('rejects a misspelled key and a wrong type (ajv)', () => {
    expect(validate(merge(defaults, MISSPELLED))).toBe(false);
    expect(validate.errors).toContainEqual(expect.objectContaining({ instancePath: '/services/readApi', keyword: 'additionalProperties', params: { additionalProperty: 'replicas' } }));
    expect(validate(merge(defaults, WRONG_TYPE))).toBe(false);
    expect(validate.errors).toContainEqual(expect.objectContaining({ instancePath: '/services/mcpGateway/replicaCount', keyword: 'type' }));
  });

  // A platform team's audit: each rendered, and the pods could not pull what it named.
  it.each([
    [{ registry: 'registry.example.com/' }, false],
    [{ repository: 'public-reviews:1.0.0' }, false],
    [{ repository: 'Public-Reviews' }, false],
    [{ tag: '1.0 beta' }, false],
    [{ tag: `1${'0'.repeat(128)}` }, false],
    [{ registry: 'registry.example.com:5000/team' }, true],
    [{ repository: 'acme/public__reviews--svc' }, true],
    [{ tag: '1.2.3-rc.1_build' }, true],
  ])('judges the image reference part %j by what a registry takes', (image, valid) => {
    expect(validate(merge(defaults, { image }))).toBe(valid);
  });

  it('rejects an image tagged latest', () => {
    expect(validate(merge(defaults, { image: { tag: 'latest' } }))).toBe(false);
  });

  describe('in Helm', () => {
    let helmBin = '';
    let dir = '';
    beforeAll(async () => {
      helmBin = await ensureHelm();
      dir = mkdtempSync(join(tmpdir(), 'chart-values-'));
    }, 120_000);
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each([
      ['misspelled key', MISSPELLED, 'Additional property replicas is not allowed'],
      ['wrong type', WRONG_TYPE, 'Invalid type. Expected: integer, given: string'],
    ])('helm template and helm lint fail on a %s', async (name, values, message) => {
      const file = join(dir, `${name.replace(' ', '-')}.yaml`);
      writeFileSync(file, stringify(values));
      const template = await helm(helmBin, ['template', 't', chartDir, '-f', file]);
      expect(template.ok).toBe(false);
      expect(template.stderr).toContain(message);
      const lint = await helm(helmBin, ['lint', '--strict', chartDir, '-f', file]);
      expect(lint.ok).toBe(false);
      expect(lint.stdout + lint.stderr).toContain(message);
    });
  });
});

describe('chart README', () => {
  const readme = readFileSync(join(chartDir, 'README.md'), 'utf8');
  const documented = new Set([...readme.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]));
  const params = [...readFileSync(join(chartDir, 'values.yaml'), 'utf8').matchAll(/## @param (\S+)/g)].map((m) => m[1] ?? '');

  /** Leaf paths of the values: scalars, lists and empty maps. */
  function leaves(value: unknown, path: string): string[] {
    if (!isObject(value) || Object.keys(value).length === 0) return [path];
    return Object.entries(value).flatMap(([k, v]) => leaves(v, path ? `${path}.${k}` : k));
  }

  it('documents every value of values.yaml (a value or one of its parents has an @param)', () => {
    const undocumented = leaves(defaults, '').filter((leaf) => !params.some((p) => leaf === p || leaf.startsWith(`${p}.`)));
    expect(undocumented).toEqual([]);
  });

  it('lists exactly the @param values in its table', () => {
    expect([...documented].sort()).toEqual([...params].sort());
  });
});
