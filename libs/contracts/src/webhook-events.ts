// The event types a tenant webhook endpoint may subscribe to (ADR 0040). Declared once here:
// the authority validates subscriptions against it, and the CLI offers it as its default.
export const WEBHOOK_EVENT_TYPES = [
  'budget.threshold_crossed',
  'budget.exhausted',
  'budget.overrun',
  'hold.expired',
  'ambiguity.recorded',
  'ambiguity.resolved',
  'capability.revoked',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
