// Runs the `budget` command handlers as Nest microservices of their own on the host's
// NATS connection: core request/reply always (ADR 0025), the durable JetStream commands
// (ADR 0003) while nats.budget_commands is 'jetstream'. It is deliberately not connected to the HTTP app: a hybrid app that
// inherits the HTTP config would run the HTTP validation pipe and the problem+json filter
// on commands, turning a validation failure into a retried "internal error".
import { Module, type DynamicModule, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { BackgroundTask, HostContext } from '@tally/platform-app';
import { commandConcurrencyOf, commandDeliveriesOf, replyBucketLimitsOf, streamLimitsOf } from '@tally/platform-app';
import { tallyStreamSpecs } from '@tally/platform-jetstream';
import {
  CoreCommandServer,
  JetStreamCommandServer,
  type CoreCommandServerOptions,
  type JetStreamCommandServerOptions,
} from '@tally/platform-nest';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { BudgetCommandsController } from './budget-commands.controller.js';

export interface CommandServerLimits {
  readonly concurrencyMax: number;
  /** Core requests waiting for a handler slot before more are answered `unavailable`. */
  readonly waitingMax: number;
  readonly drainTimeoutMs: number;
}

@Module({})
class BudgetCommandsModule {
  static register(port: AuthorityPort): DynamicModule {
    return {
      module: BudgetCommandsModule,
      controllers: [BudgetCommandsController],
      providers: [{ provide: AUTHORITY_PORT, useValue: port }],
    };
  }
}

export function commandServerOptions(ctx: HostContext, limits: CommandServerLimits): JetStreamCommandServerOptions {
  const names = ctx.nats.names;
  const specs = tallyStreamSpecs(names, streamLimitsOf(ctx.config));
  const c = ctx.config.consumers;
  // The consumer's and the reply cache's limits come from the topology, which `tally provision` creates them with.
  const concurrencyMax = commandConcurrencyOf(ctx.config, 'budget');
  return {
    connection: ctx.nats.nc,
    names,
    service: 'budget',
    commandsStream: specs.find((s) => s.name === names.commandsStream)!,
    deadLetterStream: specs.find((s) => s.name === names.deadLetterStream)!,
    replyCache: replyBucketLimitsOf(ctx.config),
    consumer: {
      ackWaitMs: c.ack_wait_ms,
      deliveriesMax: commandDeliveriesOf(ctx.config),
      ackPendingMax: Math.max(c.ack_pending_max, concurrencyMax),
      fetchBatch: c.fetch_batch,
      concurrencyMax,
      pullExpiresMs: 5_000,
      idleHeartbeatMs: 2_000,
      workingIntervalMs: Math.min(c.working_interval_ms, Math.floor(c.ack_wait_ms / 2)),
    },
    retry: { backoffBaseMs: 100, backoffMaxMs: c.nak_delay_max_ms },
    publishTimeoutMs: ctx.config.nats.publish_timeout_ms,
    drainTimeoutMs: limits.drainTimeoutMs,
  };
}

export function coreServerOptions(ctx: HostContext, limits: CommandServerLimits): CoreCommandServerOptions {
  const names = ctx.nats.names;
  const specs = tallyStreamSpecs(names, streamLimitsOf(ctx.config));
  return {
    connection: ctx.nats.nc,
    names,
    service: 'budget',
    deadLetterStream: specs.find((s) => s.name === names.deadLetterStream)!,
    concurrencyMax: limits.concurrencyMax,
    waitingMax: limits.waitingMax,
    publishTimeoutMs: ctx.config.nats.publish_timeout_ms,
    drainTimeoutMs: limits.drainTimeoutMs,
  };
}

/** The command servers this replica runs: core requests, and the JetStream commands when configured. */
export async function startCommandServers(
  ctx: HostContext,
  port: AuthorityPort,
  limits: CommandServerLimits,
): Promise<BackgroundTask[]> {
  const core = await startServer(port, ctx, new CoreCommandServer(coreServerOptions(ctx, limits)), 'budget-requests');
  if (ctx.config.nats.budget_commands !== 'jetstream') return [core];
  const durable = new JetStreamCommandServer(commandServerOptions(ctx, limits));
  return [core, await startServer(port, ctx, durable, 'budget-commands')];
}

async function startServer(
  port: AuthorityPort,
  ctx: HostContext,
  strategy: CoreCommandServer | JetStreamCommandServer,
  name: string,
): Promise<BackgroundTask> {
  const app: INestMicroservice = await NestFactory.createMicroservice(BudgetCommandsModule.register(port), {
    strategy,
    logger: ctx.logger,
  });
  await app.listen();
  return { name, stop: () => app.close() };
}
