// The hand-written part of the agent-orchestrator's OpenAPI 3.1 document (ADR 0031): the
// responses and their schemas, summaries and operation ids. Routes, parameters and request
// bodies are generated at boot from the controllers and their DTOs. It describes the
// public contract of http-api.md (names are fixed; fields may only be added).
import { MONEY_JSON_SCHEMA } from '@tally/contracts';
import { PROBLEM_JSON_SCHEMA } from '@tally/platform-app';

const json = (schema: Record<string, unknown>) => ({ 'application/json': { schema } });
const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const idParam = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
});
const notFound = { description: 'No such work unit or session', content: problem };
const money = MONEY_JSON_SCHEMA;

const schemas: Record<string, unknown> = {
  Problem: PROBLEM_JSON_SCHEMA,
  Accepted: {
    type: 'object',
    required: ['work_id', 'status'],
    properties: { work_id: { type: 'string' }, status: { const: 'queued' } },
  },
  WorkStatus: {
    type: 'object',
    required: ['work_id', 'status'],
    properties: {
      work_id: { type: 'string' },
      session_id: { type: 'string' },
      status: { enum: ['queued', 'running', 'completed', 'failed', 'aborted'] },
      error: { type: 'string' },
      output: { type: 'string' },
    },
  },
  Usage: {
    type: 'object',
    required: ['input_tokens', 'output_tokens'],
    properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' }, cost_units: money },
  },
  Attempt: {
    type: 'object',
    required: ['ordinal', 'reason', 'domain', 'settlement', 'latency_ms', 'provider', 'model'],
    properties: {
      ordinal: { type: 'integer', minimum: 0 },
      reason: { enum: ['initial', 'retry', 'route_fallback', 'endurance_retry'] },
      domain: { enum: ['account', 'provider', 'model', 'request', 'network', 'deadline', 'unknown'] },
      settlement: { enum: ['ok', 'failed', 'cancelled', 'unknown'] },
      latency_ms: { type: 'integer', minimum: 0 },
      usage: ref('Usage'),
      error: { type: 'string' },
      provider: { type: 'string' },
      model: { type: 'string' },
      hold_id: {
        type: 'string',
        description: "The budget authority's hold; prefixed 'unmetered:' when no authority admitted it",
      },
    },
  },
  Receipt: {
    type: 'object',
    required: ['work_id', 'purpose', 'provider', 'model', 'attempts', 'winning_attempt'],
    properties: {
      work_id: { type: 'string' },
      purpose: { type: 'string' },
      provider: { type: 'string' },
      model: { type: 'string' },
      attempts: { type: 'array', items: ref('Attempt') },
      winning_attempt: { type: ['integer', 'null'], description: 'Ordinal of the ok attempt, or null' },
      metered: { type: 'boolean', description: 'False when any attempt ran in unmetered mode' },
    },
  },
  Messages: {
    type: 'object',
    required: ['messages'],
    properties: {
      messages: {
        type: 'array',
        items: {
          type: 'object',
          required: ['role', 'content'],
          properties: { role: { type: 'string' }, content: { type: 'string' } },
        },
      },
    },
  },
  SessionLog: {
    type: 'object',
    required: ['entries', 'warnings'],
    properties: {
      entries: {
        type: 'array',
        items: {
          type: 'object',
          required: ['kind'],
          properties: { kind: { enum: ['header', 'message', 'receipt', 'turn-card'] } },
          additionalProperties: true,
        },
      },
      warnings: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            sequence: { type: 'integer' },
            work_id: { type: 'string' },
            event_type: { type: 'string' },
            message: { type: 'string' },
          },
        },
      },
    },
  },
};

/** ADR 0045: the unit (or a unit of the session) is quarantined by its projection. */
const quarantined = {
  description: 'projection_quarantined: the projection could not apply one of its events (the detail names which)',
  content: problem,
};

export const orchestratorOpenApi: Record<string, unknown> = {
  openapi: '3.1.0',
  info: {
    title: 'Tally agent-orchestrator',
    version: '0.1.0',
    description:
      'Runs work units on dispatch workers under the budget authority; every dispatch attempt has a receipt.',
  },
  paths: {
    '/v1/work': {
      post: {
        operationId: 'submitWork',
        summary: 'Submit a work unit (idempotent by work_id)',
        responses: {
          '202': { description: 'Recorded and queued', content: json(ref('Accepted')) },
          '400': { description: 'Invalid body; errors name each field', content: problem },
          '409': { description: 'The work_id exists with different content', content: problem },
        },
      },
    },
    '/v1/work/{id}': {
      get: {
        operationId: 'getWork',
        parameters: [idParam('id', 'Work id')],
        responses: {
          '200': { description: 'Status', content: json(ref('WorkStatus')) },
          '404': notFound,
          '503': quarantined,
        },
      },
    },
    '/v1/work/{id}/receipt': {
      get: {
        operationId: 'getWorkReceipt',
        parameters: [idParam('id', 'Work id')],
        responses: {
          '200': { description: 'The receipt: every dispatch attempt', content: json(ref('Receipt')) },
          '404': notFound,
          '503': quarantined,
        },
      },
    },
    '/v1/work/{id}/abort': {
      post: {
        operationId: 'abortWork',
        parameters: [idParam('id', 'Work id')],
        responses: {
          '202': {
            description: 'Abort recorded; the call in flight is cancelled',
            content: json({
              type: 'object',
              properties: { work_id: { type: 'string' }, abort: { const: 'requested' } },
            }),
          },
          '404': notFound,
          '409': { description: 'The unit already ended', content: problem },
        },
      },
    },
    '/v1/sessions/{id}/messages': {
      get: {
        operationId: 'getSessionMessages',
        parameters: [idParam('id', 'Session id')],
        responses: {
          '200': { description: 'The messages a model is shown (never receipts)', content: json(ref('Messages')) },
          '404': notFound,
          '503': quarantined,
        },
      },
    },
    '/v1/sessions/{id}/log': {
      get: {
        operationId: 'getSessionLog',
        parameters: [idParam('id', 'Session id')],
        responses: {
          '200': {
            description: 'Header, then per unit: prompt, receipt, reply, turn card',
            content: json(ref('SessionLog')),
          },
          '404': notFound,
          '503': quarantined,
        },
      },
    },
    '/healthz': { get: { operationId: 'healthz', responses: { '200': { description: 'Alive' } } } },
    '/readyz': {
      get: {
        operationId: 'readyz',
        responses: {
          '200': { description: 'Ready: {status}; with an operator key, the durability report too' },
          '503': { description: 'Not ready' },
        },
      },
    },
  },
  components: { schemas },
};
