import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

const TARGET = 'draft-2020-12';

export function componentRef(id: string): string {
  return `#/components/schemas/${id}`;
}

// zod names the schemas that carry a global `.meta({ id })` but are not roots of the converted registry
// `__shared` and refers to them as `<uri(__shared)>#/$defs/<id>`; OpenAPI wants each one as a component.
const SHARED = '__shared';
const SHARED_REF_PREFIX = `${componentRef(SHARED)}#/$defs/`;

function hoistSharedRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(hoistSharedRefs);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' && value.startsWith(SHARED_REF_PREFIX) ? componentRef(value.slice(SHARED_REF_PREFIX.length)) : hoistSharedRefs(value),
    ]),
  );
}

/** A component stands inside the OpenAPI document, which fixes the dialect; `$schema`/`$id` would only confuse resolvers. */
function asComponent(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return hoistSharedRefs(rest) as JsonSchema;
}

/**
 * `components.schemas` for the given roots (keyed by their id), plus every schema with an id they contain,
 * each referenced as `#/components/schemas/<id>`. Keys are sorted so the document is byte-stable.
 */
export function componentSchemas(roots: Readonly<Record<string, z.ZodType>>): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(roots)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { target: TARGET, uri: componentRef });
  const { [SHARED]: shared, ...named } = schemas;
  const all: Record<string, JsonSchema> = { ...named, ...((shared?.$defs ?? {}) as Record<string, JsonSchema>) };
  return Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((id) => [id, asComponent(all[id] as JsonSchema)]),
  );
}

export interface ParameterObject {
  readonly name: string;
  readonly in: 'query' | 'path';
  readonly required: boolean;
  readonly description?: string;
  readonly schema: JsonSchema;
}

/**
 * OpenAPI parameters from the properties of an object schema, read as *input* so defaults show and
 * optional parameters are not required. The description moves from the schema to the parameter.
 */
export function parametersFrom(schema: z.ZodType, location: 'query' | 'path'): ParameterObject[] {
  const json = z.toJSONSchema(schema, { target: TARGET, io: 'input' }) as { properties?: Record<string, JsonSchema>; required?: string[] };
  const required = new Set(json.required ?? []);
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return {
      name,
      in: location,
      required: location === 'path' || required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: propertySchema,
    };
  });
}
