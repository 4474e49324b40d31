// Proves issue 12 item 6 (ADR 0031) against both running services: /openapi.json is
// generated from the mounted controllers and their DTOs. Every route each service mounts is
// in its document with its method, and the document lists no route that is not served;
// every body and query DTO has its schema, every property its validators check is there,
// required exactly when no IsOptional guards it, with the type, enum, pattern and nesting
// its validators enforce, and no property the validators would refuse; and the server's
// validator refuses a body the document says is incomplete, naming the field.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AUTHORITY_CONTROLLERS,
  AUTHORITY_OPTIONAL_CONTROLLERS,
} from '../../apps/budget-authority/src/authority.module.js';
import { ORCHESTRATOR_CONTROLLERS } from '../../apps/agent-orchestrator/src/orchestrator.service.js';
import { routeTable } from '@tally/platform-auth';
import { nestedClassOf, routeDtosOf, validatorsOf } from '@tally/platform-app';
import { AuthorityStack } from '../budget/support/authority-stack.js';
import { OrchestratorHarness } from '../orchestrator/orchestrator.harness.js';
import { adminHeaders } from '../support/auth.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Constructor = abstract new (...args: never[]) => object;

let authority: AuthorityStack;
const orchestrator = new OrchestratorHarness({ prefix: 'openapi' });
const documents: Record<string, Json> = {};

beforeAll(async () => {
  authority = await AuthorityStack.create('openapi');
  await authority.start();
  await orchestrator.start(1);
  documents['budget-authority'] = (await (await fetch(`${authority.url}/openapi.json`)).json()) as Json;
  documents['agent-orchestrator'] = (await (await fetch(`${orchestrator.url}/openapi.json`)).json()) as Json;
}, 240_000);
afterAll(async () => {
  await authority?.dispose();
  await orchestrator.dispose();
}, 60_000);

const SERVICES: Record<string, readonly Constructor[]> = {
  'budget-authority': [...AUTHORITY_CONTROLLERS, ...AUTHORITY_OPTIONAL_CONTROLLERS] as Constructor[],
  'agent-orchestrator': [...ORCHESTRATOR_CONTROLLERS] as Constructor[],
};
/** Mounted by the service host for both services. */
const HOST_ROUTES = ['get /healthz', 'get /readyz', 'get /openapi.json'];

const openapiPath = (path: string) => `/${path.replace(/^\/+/, '')}`.replace(/:([A-Za-z_]+)/g, '{$1}');

/** Every DTO a route takes, with each class they nest. */
function allDtos(controllers: readonly Constructor[]): Constructor[] {
  const out = new Set<Constructor>();
  const visit = (dto: Constructor) => {
    if (out.has(dto)) return;
    out.add(dto);
    for (const [property, rules] of validatorsOf(dto)) {
      const nested = rules.some((r) => r.type === 'nestedValidation') ? nestedClassOf(dto, property) : undefined;
      if (nested) visit(nested);
    }
  };
  routeDtosOf(controllers).forEach(visit);
  return [...out];
}

function resolve(doc: Json, schema: Json): Json {
  const ref = schema['$ref'] as string | undefined;
  return ref ? (doc['components']['schemas'][ref.split('/').pop()!] as Json) : schema;
}

/** What the validators of one property demand, read straight from class-validator's metadata. */
function expectations(rules: ReturnType<typeof validatorsOf> extends Map<string, infer V> ? V : never) {
  const names = new Set(rules.map((r) => r.name));
  const isArray = names.has('isArray') || rules.some((r) => r.each);
  const type =
    names.has('isString') || names.has('matches') || names.has('isLength')
      ? 'string'
      : names.has('isInt')
        ? 'integer'
        : names.has('isNumber')
          ? 'number'
          : names.has('isBoolean')
            ? 'boolean'
            : undefined;
  const isIn = rules.find((r) => r.name === 'isIn')?.constraints?.[0] as unknown[] | undefined;
  const pattern = (rules.find((r) => r.name === 'matches')?.constraints?.[0] as RegExp | undefined)?.source;
  return {
    required: !rules.some((r) => r.type === 'conditionalValidation'),
    isArray,
    type,
    isIn,
    pattern,
    nested: rules.some((r) => r.type === 'nestedValidation'),
    money: names.has('isMoney'),
  };
}

/** A query DTO is documented as the query parameters of the operation whose handler takes it: read them back as one object schema. */
function queryParametersAsSchema(doc: Json, dto: Constructor, controllers: readonly Constructor[]): Json | undefined {
  for (const route of routeTable(controllers)) {
    const controller = controllers.find((c) => c.name === route.controller)!;
    const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, route.handler) ?? []) as unknown[];
    if (!types.includes(dto)) continue;
    const op = doc['paths'][openapiPath(route.path)]?.[route.method.toLowerCase()] as Json | undefined;
    const query = ((op?.['parameters'] ?? []) as Json[]).filter((p) => p['in'] === 'query');
    if (query.length === 0) continue;
    return {
      properties: Object.fromEntries(query.map((p) => [p['name'], p['schema']])),
      required: query.filter((p) => p['required'] === true).map((p) => p['name']),
    };
  }
  return undefined;
}

describe('Issue 12: the OpenAPI documents are generated from the DTOs', () => {
  for (const service of Object.keys(SERVICES)) {
    it(`Issue 12: ${service} documents every route it mounts and nothing else`, () => {
      const doc = documents[service]!;
      expect(doc['openapi']).toBe('3.1.0');
      const mounted = [
        ...HOST_ROUTES,
        // @All (the MCP endpoint) serves every method, and is documented under each.
        ...routeTable(SERVICES[service]!).flatMap((r) =>
          (r.method === 'ALL' ? ['get', 'post', 'put', 'patch', 'delete'] : [r.method.toLowerCase()]).map(
            (m) => `${m} ${openapiPath(r.path)}`,
          ),
        ),
      ];
      const documented = Object.entries(doc['paths'] as Json).flatMap(([path, ops]) =>
        Object.keys(ops as Json)
          .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
          .map((m) => `${m} ${path}`),
      );
      expect([...new Set(documented)].sort()).toEqual([...new Set(mounted)].sort());
    });

    it(`Issue 12: ${service}: every DTO field is in the document as its validator checks it (required, type, enum, pattern, nesting)`, () => {
      const doc = documents[service]!;
      const schemas = doc['components']['schemas'] as Json;
      const dtos = allDtos(SERVICES[service]!);
      expect(dtos.length).toBeGreaterThan(service === 'budget-authority' ? 8 : 3);
      for (const dto of dtos) {
        const schema = (schemas[dto.name] as Json | undefined) ?? queryParametersAsSchema(doc, dto, SERVICES[service]!);
        expect({ dto: dto.name, documented: schema !== undefined }).toEqual({ dto: dto.name, documented: true });
        const validators = validatorsOf(dto);
        const properties = (schema!['properties'] ?? {}) as Json;
        // Unknown keys are refused (forbidNonWhitelisted): the document names exactly the validated fields.
        expect({ dto: dto.name, fields: Object.keys(properties).sort() }).toEqual({
          dto: dto.name,
          fields: [...validators.keys()].sort(),
        });
        const required = new Set((schema!['required'] ?? []) as string[]);
        for (const [field, rules] of validators) {
          const want = expectations(rules);
          const where = `${dto.name}.${field}`;
          const got = properties[field] as Json;
          expect({ where, required: required.has(field) }).toEqual({ where, required: want.required });
          const value = want.isArray
            ? (expect({ where, type: got['type'] }).toEqual({ where, type: 'array' }), got['items'] as Json)
            : got;
          if (want.nested) {
            const nested = nestedClassOf(dto, field)!;
            expect({ where, ref: value['$ref'] }).toEqual({ where, ref: `#/components/schemas/${nested.name}` });
            continue;
          }
          if (want.money) expect({ where, oneOf: Array.isArray(value['oneOf']) }).toEqual({ where, oneOf: true });
          if (want.type) expect({ where, type: value['type'] }).toEqual({ where, type: want.type });
          if (want.isIn) expect({ where, enum: value['enum'] }).toEqual({ where, enum: want.isIn });
          if (want.pattern) expect({ where, pattern: value['pattern'] }).toEqual({ where, pattern: want.pattern });
        }
      }
    });
  }

  it('Issue 12: each route that takes a body names its DTO schema, and each query DTO is listed as its parameters', () => {
    for (const service of Object.keys(SERVICES)) {
      const doc = documents[service]!;
      for (const [path, ops] of Object.entries(doc['paths'] as Json))
        for (const [method, op] of Object.entries(ops as Json)) {
          const body = op['requestBody']?.['content']?.['application/json']?.['schema'] as Json | undefined;
          if (body)
            expect({ path, method, schema: resolve(doc, body) !== undefined }).toEqual({ path, method, schema: true });
        }
    }
    const events = documents['budget-authority']!['paths']['/v1/capabilities/{id}/events']['get'] as Json;
    const params = (events['parameters'] as Json[]).map((p) => `${p['in']}:${p['name']}:${p['required'] === true}`);
    expect(params.sort()).toEqual(['path:id:true', 'query:grant_index:false', 'query:limit:false']);
    const issue = documents['budget-authority']!['paths']['/v1/capabilities']['post'] as Json;
    expect(issue['requestBody']['content']['application/json']['schema']).toEqual({
      $ref: '#/components/schemas/IssueCapabilityDto',
    });
    // What the validators cannot say stays hand-written: the responses and their schemas.
    expect(issue['responses']['201']).toBeDefined();
    expect(documents['budget-authority']!['components']['schemas']['Receipt']).toBeDefined();
    expect(documents['budget-authority']!['components']['schemas']['Problem']).toBeDefined();
  });

  it('Issue 12: the validator refuses a body without a field the document marks required, naming it', async () => {
    const schema = documents['budget-authority']!['components']['schemas']['IssueCapabilityDto'] as Json;
    expect(schema['required']).toEqual(expect.arrayContaining(['subject_public_key', 'ttl_seconds', 'grants']));
    for (const field of schema['required'] as string[]) {
      const body: Json = {
        subject_public_key: 'A'.repeat(43),
        ttl_seconds: 60,
        grants: [{ server_id: 's', tool_name: 't', max_invocations: 1 }],
      };
      delete body[field];
      const res = await fetch(`${authority.url}/v1/capabilities`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...adminHeaders() },
        body: JSON.stringify(body),
      });
      expect({ field, status: res.status }).toEqual({ field, status: 400 });
      const problem = (await res.json()) as Json;
      expect((problem['errors'] as Json[]).map((e) => e['field'])).toContain(field);
    }
  });
});
