// The NATS connection of the operator commands that must not provision anything (backup,
// restore): the services' servers and login, without their boot-time stream provisioning,
// since a restore needs the ledger streams to be absent. Its inboxes live under
// OPERATOR_INBOX_PREFIX, so an operator user can be limited to its own replies.
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectTallyNats, DependencyUnavailable, OPERATOR_INBOX_PREFIX, type TallyConfig } from '@tally/platform-app';
import { CliError, ExitCode } from './cli/exit-codes.js';

export { OPERATOR_INBOX_PREFIX };

export interface OperatorNats {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  close(): Promise<void>;
}

export async function connectOperatorNats(config: TallyConfig, name: string): Promise<OperatorNats> {
  const { nc, jsm } = await connectTallyNats(config, name, OPERATOR_INBOX_PREFIX).catch((error: unknown) => {
    if (error instanceof DependencyUnavailable) throw new CliError(error.message, ExitCode.unavailable);
    throw error;
  });
  return { nc, jsm, close: () => nc.drain() };
}
