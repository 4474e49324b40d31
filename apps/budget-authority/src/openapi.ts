// The hand-written part of the budget-authority's OpenAPI 3.1 document (ADR 0031): what
// the validators cannot say. The routes, parameters and request bodies are generated from
// the controllers and DTOs at boot (platform-app's openapi-from-dtos); this file adds the
// responses, their schemas, summaries and operation ids. Field names are the public
// contract of http-api.md; money is an integer number of minor units, a JSON number up to
// 2^53-1 and a decimal string above it.
import { MONEY_JSON_SCHEMA } from '@tally/contracts';
import { PROBLEM_JSON_SCHEMA } from '@tally/platform-app';

const money = MONEY_JSON_SCHEMA;
const signedMoney = { oneOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?[0-9]{1,30}$' }] };
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
});
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

const schemas = {
  Problem: PROBLEM_JSON_SCHEMA,
  Grant: {
    type: 'object',
    required: ['server_id', 'tool_name'],
    properties: {
      server_id: { type: 'string' },
      tool_name: { type: 'string', description: 'a tool name, or "*" for every tool of the server' },
      max_invocations: { type: 'integer', minimum: 0 },
      max_cost_per_invocation: money,
      max_total_cost_units: money,
      currency: { type: 'string', pattern: '^[A-Z]{3}$' },
    },
  },
  IssuedCapability: {
    type: 'object',
    required: ['id', 'token', 'expires_at', 'grants'],
    properties: {
      id: { type: 'string' },
      root_id: { type: 'string' },
      token: { type: 'string' },
      expires_at: { type: 'string', format: 'date-time' },
      grants: { type: 'array', items: ref('Grant') },
    },
  },
  Revoked: {
    type: 'object',
    required: ['id', 'revoked_at', 'revoked_descendants'],
    properties: {
      id: { type: 'string' },
      revoked_at: { type: 'string', format: 'date-time' },
      revoked_descendants: { type: 'array', items: { type: 'string' } },
    },
  },
  Usage: {
    type: 'object',
    required: ['id', 'grants'],
    properties: {
      id: { type: 'string' },
      grants: {
        type: 'array',
        items: {
          type: 'object',
          required: [
            'grant_index',
            'invocation_count',
            'exposed_cost_units',
            'realized_cost_units',
            'committed_cost_units',
            'overrun_cost_units',
            'currency',
          ],
          properties: {
            grant_index: { type: 'integer' },
            invocation_count: { type: 'integer' },
            exposed_cost_units: money,
            realized_cost_units: { ...money, description: 'the whole charge of every settlement, overruns included' },
            committed_cost_units: money,
            overrun_cost_units: {
              ...money,
              description:
                'what providers billed beyond their holds, booked as spend (0 when none); while committed exceeds the limit the grant refuses admissions',
            },
            currency: { type: ['string', 'null'] },
          },
        },
      },
    },
  },
  MutationEvent: {
    type: 'object',
    required: ['event_id', 'kind', 'grant_index', 'commit_index', 'occurred_at'],
    properties: {
      event_id: { type: 'string' },
      kind: {
        enum: [
          'increment_invocation',
          'reserve_invocation',
          'authorize_exposure',
          'capture_invocation',
          'reverse_invocation',
          'cancel_captured_before_dispatch',
          'reverse_exposure',
          'release_exposure',
          'reconcile_spend',
          'capture_spend',
        ],
      },
      hold_id: { type: 'string' },
      request_id: { type: 'string' },
      capability_id: { type: 'string' },
      grant_index: { type: 'integer' },
      commit_index: { type: 'integer', description: 'the stream sequence of the event' },
      occurred_at: { type: 'string', format: 'date-time' },
      cause: {
        type: ['string', 'null'],
        description: 'why an undo happened: expired, reconciled, nonce_preflight, payment_declined, …',
      },
      invocation_delta: { type: 'integer' },
      exposed_delta_units: signedMoney,
      realized_delta_units: signedMoney,
    },
  },
  Decision: {
    type: 'object',
    required: ['verdict', 'receipt'],
    properties: {
      verdict: { enum: ['allow', 'deny'] },
      reason: { type: 'string' },
      hold_id: { type: 'string' },
      grant_index: { type: 'integer' },
      dispatch: { type: 'boolean', description: 'false for an Allow that only hands out an execution nonce' },
      execution_nonce: { type: 'string' },
      admission_proof: { type: 'object' },
      receipt: ref('Receipt'),
    },
  },
  Receipt: {
    type: 'object',
    required: ['id', 'verdict', 'reason', 'metadata', 'signature', 'key_id'],
    properties: {
      id: { type: 'string' },
      kind: { enum: ['admission', 'settlement'] },
      verdict: { enum: ['allow', 'deny'] },
      reason: { type: ['string', 'null'] },
      request_id: { type: ['string', 'null'] },
      capability_id: { type: ['string', 'null'] },
      hold_id: { type: ['string', 'null'] },
      grant_index: { type: ['integer', 'null'] },
      issued_at: { type: 'string', format: 'date-time' },
      metadata: { type: 'object', properties: { budget_authority: { type: 'object' }, financial: { type: 'object' } } },
      signature: { type: 'string', description: 'Ed25519 over the canonical JSON of the receipt without signature' },
      key_id: { type: 'string' },
    },
  },
  Keys: {
    type: 'object',
    required: ['keys'],
    properties: {
      keys: {
        type: 'array',
        items: {
          type: 'object',
          required: ['key_id', 'algorithm', 'public_key'],
          properties: { key_id: { type: 'string' }, algorithm: { const: 'ed25519' }, public_key: { type: 'string' } },
        },
      },
    },
  },
};

/** ADR 0045: a read of a budget tree its projection has quarantined. */
const QUARANTINED = problem('projection_quarantined: the projection could not apply an event of this tree');

export const authorityOpenApi: Record<string, unknown> = {
  openapi: '3.1.0',
  info: {
    title: 'Tally budget-authority',
    version: '0.1.0',
    description: 'Issues signed capabilities and admits paid invocations.',
  },
  paths: {
    '/v1/capabilities': {
      post: {
        operationId: 'issueCapability',
        summary: 'Issue a capability, or delegate one with parent_id (it only narrows)',
        responses: {
          201: { description: 'issued', ...json(ref('IssuedCapability')) },
          400: problem('invalid input'),
          404: problem('unknown parent'),
          422: problem('refused by the delegation rules'),
        },
      },
    },
    '/v1/capabilities/{id}/revoke': {
      post: {
        operationId: 'revokeCapability',
        parameters: [idParam],
        responses: {
          200: { description: 'revoked with all descendants', ...json(ref('Revoked')) },
          404: problem('unknown capability'),
        },
      },
    },
    '/v1/capabilities/{id}/usage': {
      get: {
        operationId: 'capabilityUsage',
        parameters: [idParam],
        responses: {
          200: { description: 'usage per grant', ...json(ref('Usage')) },
          404: problem('unknown capability'),
          503: QUARANTINED,
        },
      },
    },
    '/v1/capabilities/{id}/events': {
      get: {
        operationId: 'capabilityEvents',
        parameters: [
          idParam,
          { name: 'grant_index', in: 'query', schema: { type: 'integer', minimum: 0 } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        ],
        responses: {
          200: {
            description: 'mutation events, newest first',
            ...json({ type: 'object', properties: { events: { type: 'array', items: ref('MutationEvent') } } }),
          },
          404: problem('unknown capability'),
          503: QUARANTINED,
        },
      },
    },
    '/v1/admissions': {
      post: {
        operationId: 'admit',
        summary: 'The HTTP twin of the Admit command; send Idempotency-Key to make a retry return the first answer',
        parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string' } }],
        responses: {
          200: { description: 'the decision with its signed receipt', ...json(ref('Decision')) },
          400: problem('invalid input'),
          503: problem('unavailable: not answered yet (its capture stands); retry with the same Idempotency-Key'),
        },
      },
    },
    '/v1/settlements': {
      post: {
        operationId: 'settle',
        summary: 'The HTTP twin of the Settle command',
        parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string' } }],
        responses: {
          200: {
            description: 'the signed receipt',
            ...json({ type: 'object', properties: { receipt: ref('Receipt') } }),
          },
          400: problem('invalid input'),
          404: problem('unknown hold'),
          422: problem("currency_mismatch: outcome.currency is not the hold's; nothing is booked"),
        },
      },
    },
    '/v1/nonces/redeem': {
      post: {
        operationId: 'redeemNonce',
        summary: 'Consume an execution nonce outside an Admit (e.g. at the tool server)',
        responses: {
          200: {
            description: 'whether the nonce was valid and is now consumed',
            ...json({ type: 'object', properties: { redeemed: { type: 'boolean' } } }),
          },
          400: problem('invalid input'),
        },
      },
    },
    '/v1/receipts/{id}': {
      get: {
        operationId: 'receipt',
        parameters: [idParam],
        responses: {
          200: { description: 'the signed receipt', ...json(ref('Receipt')) },
          404: problem('unknown receipt'),
          503: QUARANTINED,
        },
      },
    },
    '/v1/keys': {
      get: {
        operationId: 'keys',
        responses: { 200: { description: 'the keys receipts and tokens are signed with', ...json(ref('Keys')) } },
      },
    },
    '/v1/test/faults': {
      post: {
        operationId: 'configureFaults',
        summary: 'Test only: present when authority.fault_injection is on (simulated rail only)',
        responses: { 200: { description: 'the counters of the simulated rail' }, 400: problem('invalid input') },
      },
    },
  },
  components: { schemas },
};
