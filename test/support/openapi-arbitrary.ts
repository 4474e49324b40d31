// fast-check arbitraries read off a service's OpenAPI document: for each operation, bodies
// that follow its request schema (so some pass validation and reach the handler), bodies
// that bend it (a field of the wrong type, an extra field, hostile JSON), path parameters
// and queries. Bounded: arrays hold at most a few items, nesting stops at a fixed depth.
import fc from 'fast-check';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One operation of the document: its method, its path template and what it takes. */
export interface Operation {
  readonly method: string;
  readonly path: string;
  readonly pathParams: readonly string[];
  readonly query: readonly { name: string; schema: Json }[];
  readonly body: Json | undefined;
}

const DEPTH_MAX = 4;
const ITEMS_MAX = 3;

export function operationsOf(document: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries((document['paths'] ?? {}) as Record<string, Json>))
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const parameters = ((op['parameters'] ?? []) as Json[]).map((p) => resolve(document, p));
      const body = op['requestBody']?.['content']?.['application/json']?.['schema'] as Json | undefined;
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p['in'] === 'path').map((p) => p['name'] as string),
        query: parameters
          .filter((p) => p['in'] === 'query')
          .map((p) => ({ name: p['name'] as string, schema: (p['schema'] ?? {}) as Json })),
        body: body === undefined ? undefined : resolve(document, body),
      });
    }
  return out;
}

function resolve(document: Json, node: Json): Json {
  const ref = node['$ref'];
  if (typeof ref !== 'string') return node;
  let target: unknown = document;
  for (const part of ref.replace(/^#\//, '').split('/')) target = (target as Json | undefined)?.[part];
  return (target ?? {}) as Json;
}

/** Strings that break things: empty, long, NUL, a lone surrogate, path and format tricks. */
const hostileString = fc.constantFrom(
  '',
  'x'.repeat(5_000),
  'nul\u0000here',
  'half \ud800',
  '../../etc/passwd',
  '%2e%2e%2f',
  '__proto__',
  '{"$ne":null}',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '9'.repeat(40),
  '-1',
  'budget-hold:a:b:0',
);

export const anyString = fc.oneof(fc.string({ maxLength: 24 }), hostileString);

/** Any JSON at all, hostile shapes included: the body no schema expects. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom<unknown>(
    JSON.parse('{"__proto__":{"admin":true}}'),
    JSON.parse('{"constructor":{"prototype":{"x":1}}}'),
    nested(100),
    // Long enough that spreading it into a call's arguments overflows the stack (a 500 once).
    Array.from({ length: 130_000 }, () => 0),
    null,
    'a string',
  ),
);

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

/** A value that follows `schema` as closely as this reader understands it. */
export function fromSchema(document: Json, schema: Json, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(document, schema);
  if (Array.isArray(s['enum'])) return fc.constantFrom(...(s['enum'] as unknown[]));
  if ('const' in s) return fc.constant(s['const']);
  const choices = (s['oneOf'] ?? s['anyOf']) as Json[] | undefined;
  if (choices?.length) return fc.oneof(...choices.map((c) => fromSchema(document, c, depth)));
  if (depth >= DEPTH_MAX) return fc.constant(null);
  switch (Array.isArray(s['type']) ? s['type'][0] : s['type']) {
    case 'string':
      return typeof s['pattern'] === 'string' && s['pattern'].length < 200
        ? fc.oneof(safeMatching(s['pattern'] as string), anyString)
        : fc.oneof(fc.string({ minLength: s['minLength'] ?? 0, maxLength: Math.min(s['maxLength'] ?? 24, 64) }));
    case 'integer':
      return fc.integer({ min: s['minimum'] ?? -1_000, max: Math.min(s['maximum'] ?? 1_000_000, 2 ** 31) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e9 });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(fromSchema(document, (s['items'] ?? {}) as Json, depth + 1), { maxLength: ITEMS_MAX });
    case 'object':
      return objectOf(document, s, depth);
    default:
      return s['properties'] ? objectOf(document, s, depth) : fc.jsonValue({ maxDepth: 2 });
  }
}

function objectOf(document: Json, s: Json, depth: number): fc.Arbitrary<unknown> {
  const properties = (s['properties'] ?? {}) as Record<string, Json>;
  const required = new Set((s['required'] ?? []) as string[]);
  const keys = Object.keys(properties);
  if (keys.length === 0)
    return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
  const arbs = Object.fromEntries(keys.map((k) => [k, fromSchema(document, properties[k]!, depth + 1)]));
  return fc.record(arbs, { requiredKeys: keys.filter((k) => required.has(k)) });
}

function safeMatching(pattern: string): fc.Arbitrary<string> {
  try {
    return fc.stringMatching(new RegExp(pattern)).filter((v) => v.length <= 256);
  } catch {
    return fc.string({ maxLength: 24 });
  }
}

/** A body for `operation`: mostly one that follows the schema, sometimes bent or hostile. */
export function bodyFor(document: Json, operation: Operation): fc.Arbitrary<unknown> {
  if (operation.body === undefined) return fc.constant(undefined);
  const valid = fromSchema(document, operation.body);
  const bent = fc
    .tuple(valid, fc.string({ maxLength: 12 }), hostileJson)
    .map(([v, key, junk]) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...v, [key]: junk } : junk));
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: bent },
    { weight: 1, arbitrary: hostileJson },
  );
}
