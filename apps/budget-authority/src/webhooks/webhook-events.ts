// The facts of tenant webhooks, validated when written and when read back: endpoints
// registered and deleted, every delivery attempt, and every message given up on (dead-lettered).
// No secret is ever among them: an endpoint's secret is derived, never recorded (ADR 0040).
import { EventRegistry } from '@tally/contracts';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
} from 'class-validator';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhook-policy.js';

const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const ENDPOINT_ID = /^wh_[0-9a-f]{16}$/;
const WEBHOOK_ID = /^msg_[A-Za-z0-9_-]{1,64}$/;

export class WebhookEndpointRegisteredDto {
  @Matches(TENANT_ID) tenant_id!: string;
  @Matches(ENDPOINT_ID) endpoint_id!: string;
  @IsString() @Length(1, 2_048) url!: string;
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true })
  events!: WebhookEventType[];
  @IsInt() @Min(0) at_ms!: number;
}

export class WebhookEndpointDeletedDto {
  @Matches(TENANT_ID) tenant_id!: string;
  @Matches(ENDPOINT_ID) endpoint_id!: string;
  @IsInt() @Min(0) at_ms!: number;
}

/** What a message of the outbox carries; the queue's payload and the common part of the delivery facts. */
export class WebhookDeliveryDto {
  @Matches(TENANT_ID) tenant_id!: string;
  @Matches(ENDPOINT_ID) endpoint_id!: string;
  @Matches(WEBHOOK_ID) webhook_id!: string;
  @IsIn(WEBHOOK_EVENT_TYPES) type!: WebhookEventType;
  @IsString() @Length(1, 512) source_event_id!: string;
}

export class WebhookOutboxMessageDto extends WebhookDeliveryDto {
  @IsInt() @Min(0) at_ms!: number;
  /** The exact bytes every attempt sends (signed per attempt with that attempt's timestamp). */
  @IsString() @Length(2, 65_536) body!: string;
}

export type AttemptOutcome = 'delivered' | 'failed';

export class WebhookAttemptedDto extends WebhookDeliveryDto {
  @IsInt() @Min(1) @Max(1_000) attempt!: number;
  @IsIn(['delivered', 'failed']) outcome!: AttemptOutcome;
  /** The answer's status, when there was one; its body is never read or kept. */
  @IsOptional() @IsInt() @Min(100) @Max(599) status?: number;
  /** Why it failed, in a few words (timeout, refused, redirect, status 500…). */
  @IsOptional() @IsString() @Length(1, 256) error?: string;
  @IsInt() @Min(0) duration_ms!: number;
  /** When it is tried again; absent once delivered or given up. */
  @IsOptional() @IsInt() @Min(0) retry_in_ms?: number;
  @IsInt() @Min(0) at_ms!: number;
}

export class WebhookDeadLetteredDto extends WebhookDeliveryDto {
  @IsInt() @Min(0) @Max(1_000) attempts!: number;
  @IsIn(['attempts_exhausted', 'endpoint_deleted', 'url_refused']) reason!:
    'attempts_exhausted' | 'endpoint_deleted' | 'url_refused';
  @IsOptional() @IsString() @Length(1, 256) last_error?: string;
  @IsInt() @Min(0) message_at_ms!: number;
  @IsString() @Length(2, 65_536) body!: string;
  @IsInt() @Min(0) at_ms!: number;
}

export type WebhookEndpointRegistered = WebhookEndpointRegisteredDto;
export type WebhookAttempted = WebhookAttemptedDto;
export type WebhookDeadLettered = WebhookDeadLetteredDto;
export type WebhookOutboxMessage = WebhookOutboxMessageDto;

export function webhookEventRegistry(): EventRegistry {
  return new EventRegistry([
    { type: 'WebhookEndpointRegistered', version: 1, payload: WebhookEndpointRegisteredDto },
    { type: 'WebhookEndpointDeleted', version: 1, payload: WebhookEndpointDeletedDto },
    { type: 'WebhookAttempted', version: 1, payload: WebhookAttemptedDto },
    { type: 'WebhookDeadLettered', version: 1, payload: WebhookDeadLetteredDto },
  ]);
}
