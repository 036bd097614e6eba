import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../openapi.ts';

export interface ObservedResponse {
  status: number;
  headers: Headers;
  body: string;
}

interface SchemaHolder {
  schema?: unknown;
}
interface HeaderObject extends SchemaHolder {
  required?: boolean;
  $ref?: string;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, SchemaHolder>;
}
interface OperationObject {
  responses: Record<string, ResponseObject>;
}

// ajv-formats is CommonJS with a default export; under ESM the function may sit on `.default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const SCHEMA_BASE = 'https://once.dev/openapi/payments/schemas/';
const document = openApiDocument as unknown as {
  paths: Record<string, Record<string, OperationObject>>;
  components: { schemas: Record<string, unknown>; headers: Record<string, HeaderObject> };
};

/** `#/components/schemas/X` refs become absolute ids registered with Ajv. */
function withAbsoluteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withAbsoluteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) =>
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')
        ? [key, SCHEMA_BASE + inner.slice('#/components/schemas/'.length)]
        : [key, withAbsoluteRefs(inner)],
    ),
  );
}

// JSON Schema 2020-12 is OpenAPI 3.1's schema dialect. Strict mode: a schema keyword Ajv does not
// know is a mistake in the document, not something to skip silently.
const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
for (const [name, schema] of Object.entries(document.components.schemas)) {
  ajv.addSchema({ ...(withAbsoluteRefs(schema) as object), $id: SCHEMA_BASE + name });
}
const compiled = new Map<unknown, ValidateFunction>();
function validatorFor(schema: unknown): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(withAbsoluteRefs(schema) as object);
    compiled.set(schema, validate);
  }
  return validate;
}

function resolveHeader(header: HeaderObject): HeaderObject {
  if (!header.$ref) return header;
  const name = header.$ref.replace('#/components/headers/', '');
  const resolved = document.components.headers[name];
  if (!resolved) throw new Error(`unresolved header ref ${header.$ref}`);
  return resolved;
}

function operationFor(method: string, path: string): { template: string; op: OperationObject } {
  for (const [template, item] of Object.entries(document.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    const op = item[method.toLowerCase()];
    if (op && pattern.test(path)) return { template, op };
  }
  throw new Error(`${method} ${path} is not in the OpenAPI description`);
}

/** Every way `response` breaks the OpenAPI description of `method path`; empty when it conforms. */
export function openApiViolations(
  method: string,
  path: string,
  response: ObservedResponse,
): string[] {
  const { template, op } = operationFor(method, path);
  const where = `${method} ${template} -> ${response.status}`;
  const documented = op.responses[String(response.status)] ?? op.responses.default;
  if (!documented) return [`${where}: status not documented`];
  const violations: string[] = [];

  for (const [name, declared] of Object.entries(documented.headers ?? {})) {
    const header = resolveHeader(declared);
    const value = response.headers.get(name);
    if (value === null) {
      if (header.required) violations.push(`${where}: required header ${name} missing`);
      continue;
    }
    const validate = validatorFor(header.schema);
    if (!validate(value)) {
      violations.push(`${where}: header ${name}: ${ajv.errorsText(validate.errors)}`);
    }
  }

  const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const content = documented.content;
  if (!content) {
    if (response.body !== '') violations.push(`${where}: a body where none is documented`);
    return violations;
  }
  const media = content[mediaType];
  if (!media) {
    violations.push(`${where}: content type "${mediaType}" not documented`);
    return violations;
  }
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    violations.push(`${where}: body is not JSON: ${response.body.slice(0, 200)}`);
    return violations;
  }
  const validate = validatorFor(media.schema);
  if (!validate(body)) {
    violations.push(`${where}: body: ${ajv.errorsText(validate.errors)} in ${response.body}`);
  }
  return violations;
}

/** Reads a fetch Response (consuming its body) into an {@link ObservedResponse}. */
export async function observe(response: Response): Promise<ObservedResponse> {
  return { status: response.status, headers: response.headers, body: await response.text() };
}

/** Every problem type the description documents: code -> { type URI, HTTP status }. */
export function documentedProblems(): Map<string, { type: string; status: number }> {
  const problems = new Map<string, { type: string; status: number }>();
  for (const item of Object.values(document.paths)) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const schema = response.content?.['application/problem+json']?.schema as
          | { oneOf: { properties: { code: { const: string }; type: { const: string } } }[] }
          | undefined;
        for (const { properties } of schema?.oneOf ?? []) {
          problems.set(properties.code.const, {
            type: properties.type.const,
            status: Number(status),
          });
        }
      }
    }
  }
  return problems;
}
