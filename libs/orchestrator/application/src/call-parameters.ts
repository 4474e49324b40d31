// What an Admit binds a paid call to (B13-B15, ADR 0046): the SHA-256, in hex, of the
// canonical JSON of the call's parameters (provider, model, messages, options, max_tokens),
// which is how the authority hashes `parameters` itself. The orchestrator sends only the
// hash: the messages are customer content and stay out of the budget ledger. The authority
// binds the hold, the execution nonce and the admission proof to it, so a nonce minted for
// other parameters is refused before anything is captured or paid.
import { createHash } from 'node:crypto';
import { canonicalJson } from '@tally/contracts';
import type { ChatMessage } from '@tally/orchestrator-domain';
import type { DispatchRequest } from './ports.js';

/** What the provider receives, less the client-side timeout (which is not the call's content). */
export type CallParameters = Pick<DispatchRequest, 'provider' | 'model' | 'messages' | 'max_tokens' | 'options'>;

/** The messages of a call as the gateway sends them: role, content and, when present, the structured parts. */
export function dispatchMessages(messages: readonly ChatMessage[]): DispatchRequest['messages'] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.parts === undefined ? {} : { parts: m.parts }),
  }));
}

/** Lower-case hex SHA-256 of the canonical JSON of `call`: the Admit's parameters_hash. */
export function callParametersHash(call: CallParameters): string {
  const parameters = {
    provider: call.provider,
    model: call.model,
    messages: call.messages,
    max_tokens: call.max_tokens,
    ...(call.options === undefined ? {} : { options: call.options }),
  };
  return createHash('sha256').update(canonicalJson(parameters), 'utf8').digest('hex');
}
