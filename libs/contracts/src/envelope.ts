// The event envelope: the wire shape of every event in every Tally stream.
// Payloads are validated per event type and schema version; an old version is upcast
// here, in the adapter, so that `evolve` only ever sees the current shape.
import {
  IsISO8601,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Min,
  isISO8601,
  isInt,
  isObject,
  isString,
  length,
  matches,
  min,
} from 'class-validator';
import {
  assertCommitLimits,
  assertDistinctEventIds,
  commitShapeError,
  COMMIT_VERSION,
  CommitTooLarge,
  isCommitWire,
  type CommitLimits,
} from './commit.js';
import { passesFast } from './fast-validation.js';
import {
  decodeJson,
  describeFieldErrors,
  protoKeyIn,
  protoKeyInJson,
  PROTO_KEY_MESSAGE,
  validatePlain,
  type Constructor,
  type Decoded,
  type FieldError,
} from './validation.js';

const EVENT_TYPE = /^[A-Za-z][A-Za-z0-9_.]{0,127}$/;
const ISO8601_STRICT = { strict: true } as const;

export class EventEnvelopeDto {
  @IsString() @Length(1, 512) event_id!: string;
  @IsString() @Matches(EVENT_TYPE) type!: string;
  @IsInt() @Min(1) schema_version!: number;
  @IsString() @Length(1, 256) aggregate_id!: string;
  @IsOptional() @IsString() @Length(1, 512) causation_id?: string;
  @IsOptional() @IsString() @Length(1, 512) correlation_id?: string;
  @IsISO8601(ISO8601_STRICT) occurred_at!: string;
  @IsObject() payload!: Record<string, unknown>;
}

const ENVELOPE_KEYS = new Set([
  'event_id',
  'type',
  'schema_version',
  'aggregate_id',
  'causation_id',
  'correlation_id',
  'occurred_at',
  'payload',
]);
const optionalId = (value: unknown) =>
  value === undefined || value === null || (isString(value) && length(value, 1, 512));

/**
 * The fast path of envelope decoding. It calls the same class-validator functions the
 * decorators above call, with the same arguments, so it accepts exactly what the DTO
 * accepts; it skips class-transformer and the metadata lookup, which cost several times
 * more (measured in bench/jetstream.bench.ts). Anything it does not accept (malformed
 * JSON, an unknown key, any bad field) returns undefined, and the caller takes the full
 * path, which produces the field errors.
 */
function fastEnvelope(data: Uint8Array | string): EventEnvelopeDto | undefined {
  let plain: unknown;
  try {
    plain = parseJson(data);
  } catch {
    return undefined;
  }
  return fastEnvelopeFrom(plain);
}

/** What decode would refuse must never reach the stream. */
function refusingProtoKeys(json: string): string {
  const proto = protoKeyInJson(json);
  if (proto) throw new Error(`refusing to encode an event with ${proto}: ${PROTO_KEY_MESSAGE}`);
  return json;
}

/** JSON.parse that refuses a "__proto__" key (see protoKeyIn): the full path then names its place. */
function parseJson(data: Uint8Array | string): unknown {
  const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  const value: unknown = JSON.parse(text);
  if (protoKeyIn(text, value)) throw new SyntaxError(PROTO_KEY_MESSAGE);
  return value;
}

/** The fast path's checks on an already parsed value (a commit's events are parsed with it). */
function fastEnvelopeFrom(plain: unknown): EventEnvelopeDto | undefined {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) return undefined;
  const p = plain as Record<string, unknown>;
  for (const key of Object.keys(p)) if (!ENVELOPE_KEYS.has(key)) return undefined;
  const valid =
    isString(p['event_id']) &&
    length(p['event_id'], 1, 512) &&
    isString(p['type']) &&
    matches(p['type'] as string, EVENT_TYPE) &&
    isInt(p['schema_version']) &&
    min(p['schema_version'], 1) &&
    isString(p['aggregate_id']) &&
    length(p['aggregate_id'], 1, 256) &&
    optionalId(p['causation_id']) &&
    optionalId(p['correlation_id']) &&
    isISO8601(p['occurred_at'], ISO8601_STRICT) &&
    isObject(p['payload']);
  return valid ? Object.assign(new EventEnvelopeDto(), p) : undefined;
}

/**
 * Payload validation with a fast accept (fast-validation.ts): a payload that passes the
 * compiled rules is valid as it is; anything else goes through validatePlain for its field
 * errors. Both callers keep the plain payload, never the DTO instance.
 */
function validatePayload(dto: Constructor<object>, plain: unknown): Decoded<object> {
  if (passesFast(dto, plain)) return { ok: true, value: plain as object };
  return validatePlain(dto, plain, 'payload');
}

/** An event as the application layer sees it: envelope fields plus a validated payload. */
export interface EventMessage<P = Record<string, unknown>> {
  readonly eventId: string;
  readonly type: string;
  readonly schemaVersion: number;
  readonly aggregateId: string;
  readonly causationId?: string;
  readonly correlationId?: string;
  readonly occurredAt: string;
  readonly payload: P;
}

export interface EventTypeSpec {
  readonly type: string;
  /** The current schema version; encoders always write this one. */
  readonly version: number;
  readonly payload: Constructor<object>;
  /** upcasters[v] turns a version-v payload into version v+1. */
  readonly upcasters?: Readonly<Record<number, (payload: Record<string, unknown>) => Record<string, unknown>>>;
}

export class EventRegistry {
  private readonly specs = new Map<string, EventTypeSpec>();

  constructor(specs: readonly EventTypeSpec[] = []) {
    for (const spec of specs) this.register(spec);
  }

  register(spec: EventTypeSpec): this {
    if (this.specs.has(spec.type)) throw new Error(`event type ${spec.type} registered twice`);
    this.specs.set(spec.type, spec);
    return this;
  }

  has(type: string): boolean {
    return this.specs.has(type);
  }

  versionOf(type: string): number {
    const spec = this.specs.get(type);
    if (!spec) throw new Error(`unknown event type ${type}`);
    return spec.version;
  }

  /** Decodes bytes into a validated, upcast event, or names every bad field. */
  decode(data: Uint8Array | string): Decoded<EventMessage> {
    const fast = fastEnvelope(data);
    if (fast) return this.decodeEnvelope(fast);
    const envelope = decodeJson(EventEnvelopeDto, data);
    if (!envelope.ok) return envelope;
    return this.decodeEnvelope(envelope.value);
  }

  decodeEnvelope(envelope: EventEnvelopeDto): Decoded<EventMessage> {
    const spec = this.specs.get(envelope.type);
    if (!spec) return fail('type', `unknown event type ${envelope.type}`);
    if (envelope.schema_version > spec.version) {
      return fail('schema_version', `version ${envelope.schema_version} is newer than supported ${spec.version}`);
    }
    const upcast = upcastPayload(spec, envelope.schema_version, envelope.payload);
    if (!upcast.ok) return upcast;
    const payload = validatePayload(spec.payload, upcast.value);
    if (!payload.ok) return payload;
    return {
      ok: true,
      value: {
        eventId: envelope.event_id,
        type: envelope.type,
        schemaVersion: spec.version,
        aggregateId: envelope.aggregate_id,
        ...(envelope.causation_id === undefined ? {} : { causationId: envelope.causation_id }),
        ...(envelope.correlation_id === undefined ? {} : { correlationId: envelope.correlation_id }),
        occurredAt: envelope.occurred_at,
        payload: upcast.value,
      },
    };
  }

  /** Encodes an event at the current version. The payload is validated first: a bug must not reach the stream. */
  encode(event: Omit<EventMessage, 'schemaVersion'>): Uint8Array {
    return Buffer.from(refusingProtoKeys(JSON.stringify(this.toValidWire(event))));
  }

  /**
   * Encodes the events of one append as one commit (see commit.ts): one event is its plain
   * envelope, several are a commit_version 1 message. Every payload is validated as by
   * encode; a commit above `limits` throws CommitTooLarge before anything is sent.
   */
  encodeCommit(events: readonly Omit<EventMessage, 'schemaVersion'>[], limits: CommitLimits): Uint8Array {
    assertCommitLimits(events.length, limits);
    assertDistinctEventIds(events.map((e) => e.eventId));
    const wire =
      events.length === 1
        ? this.toValidWire(events[0]!)
        : { commit_version: COMMIT_VERSION, events: events.map((e) => this.toValidWire(e)) };
    const bytes = Buffer.from(refusingProtoKeys(JSON.stringify(wire)));
    if (bytes.length > limits.bytesMax) throw new CommitTooLarge(events.length, bytes.length, limits);
    return bytes;
  }

  /**
   * Decodes one stream message into its events, in commit order: a plain envelope is a
   * commit of one (it decodes exactly as decode does), a commit's every event is validated
   * and upcast like a single one, and a bad event is named by its place (`events[2].type`).
   */
  decodeCommit(data: Uint8Array | string): Decoded<EventMessage[]> {
    let plain: unknown;
    try {
      plain = parseJson(data);
    } catch {
      return this.decodeCommitOfOne(data);
    }
    if (!isCommitWire(plain)) return this.decodeCommitOfOne(data);
    const shape = commitShapeError(plain);
    if (shape) return { ok: false, errors: [shape] };
    const events: EventMessage[] = [];
    for (const [index, item] of plain.events.entries()) {
      const decoded = this.decodePlain(item, `events[${index}]`);
      if (!decoded.ok) return decoded;
      events.push(decoded.value);
    }
    return { ok: true, value: events };
  }

  private decodeCommitOfOne(data: Uint8Array | string): Decoded<EventMessage[]> {
    const decoded = this.decode(data);
    return decoded.ok ? { ok: true, value: [decoded.value] } : decoded;
  }

  /** One parsed envelope inside a commit: the fast path, else the DTO path for field errors under `field`. */
  private decodePlain(plain: unknown, field: string): Decoded<EventMessage> {
    const fast = fastEnvelopeFrom(plain);
    const envelope = fast ? { ok: true as const, value: fast } : validatePlain(EventEnvelopeDto, plain, field);
    if (!envelope.ok) return envelope;
    const decoded = this.decodeEnvelope(envelope.value);
    if (decoded.ok) return decoded;
    return { ok: false, errors: decoded.errors.map((e) => ({ field: `${field}.${e.field}`, message: e.message })) };
  }

  private toValidWire(event: Omit<EventMessage, 'schemaVersion'>): EventEnvelopeDto {
    const spec = this.specs.get(event.type);
    if (!spec) throw new Error(`cannot encode unknown event type ${event.type}`);
    const payload = validatePayload(spec.payload, event.payload);
    if (!payload.ok)
      throw new Error(`refusing to encode invalid ${event.type}: ${describeFieldErrors(payload.errors)}`);
    return toWire(event, spec.version);
  }
}

function toWire(event: Omit<EventMessage, 'schemaVersion'>, version: number): EventEnvelopeDto {
  return {
    event_id: event.eventId,
    type: event.type,
    schema_version: version,
    aggregate_id: event.aggregateId,
    ...(event.causationId === undefined ? {} : { causation_id: event.causationId }),
    ...(event.correlationId === undefined ? {} : { correlation_id: event.correlationId }),
    occurred_at: event.occurredAt,
    payload: event.payload,
  };
}

function upcastPayload(
  spec: EventTypeSpec,
  from: number,
  payload: Record<string, unknown>,
): Decoded<Record<string, unknown>> {
  let current = payload;
  for (let version = from; version < spec.version; version++) {
    const upcaster = spec.upcasters?.[version];
    if (!upcaster) return fail('schema_version', `no upcaster for ${spec.type} v${version} -> v${version + 1}`);
    current = upcaster(current);
  }
  return { ok: true, value: current };
}

function fail(field: string, message: string): { ok: false; errors: FieldError[] } {
  return { ok: false, errors: [{ field, message }] };
}
