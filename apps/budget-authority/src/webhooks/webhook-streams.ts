// The webhook streams (names, specs and consumers live in @tally/platform-app's webhook
// topology, which `tally provision` reads too); provisioned here when nats.provision is auto.
import type { JetStreamManager } from '@nats-io/jetstream';
import { webhookStreamSpecs, type TallyConfig, type WebhookNames } from '@tally/platform-app';
import { ensureStream } from '@tally/platform-jetstream';

export { webhookNames, webhookStreamSpecs, type WebhookNames } from '@tally/platform-app';

export async function provisionWebhookStreams(jsm: JetStreamManager, names: WebhookNames, config: TallyConfig) {
  for (const spec of webhookStreamSpecs(names, config)) await ensureStream(jsm, spec);
}
