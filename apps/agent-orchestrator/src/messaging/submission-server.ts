// Serves the `work` commands (`<ns>.cmd.work.submit`) as a Nest microservice of its own on
// the host's NATS connection. It is not connected to the HTTP app: a hybrid app inherits
// the HTTP validation pipe and problem+json filter, which would turn a validation failure
// into a retried "internal error" instead of a named-field answer.
import { Module, type DynamicModule, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  commandConcurrencyOf,
  commandDeliveriesOf,
  replyBucketLimitsOf,
  streamLimitsOf,
  type BackgroundTask,
} from '@tally/platform-app';
import { tallyStreamSpecs } from '@tally/platform-jetstream';
import { JetStreamCommandServer, type JetStreamCommandServerOptions } from '@tally/platform-nest';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';
import { WorkSubmission } from '../work/work-submission.js';
import { WorkCommandsController } from './work-commands.controller.js';
import type { CapabilityTokenVerifier } from '@tally/directory-service';
import { CAPABILITY_TOKENS } from '../http/work-scope.js';

const DRAIN_TIMEOUT_MS = 10_000;

@Module({})
class WorkCommandsModule {
  static register(submission: WorkSubmission, tokens: CapabilityTokenVerifier): DynamicModule {
    return {
      module: WorkCommandsModule,
      controllers: [WorkCommandsController],
      providers: [
        { provide: WorkSubmission, useValue: submission },
        { provide: CAPABILITY_TOKENS, useValue: tokens },
      ],
    };
  }
}

export function submissionServerOptions(rt: OrchestratorRuntime): JetStreamCommandServerOptions {
  const { config, nats } = rt.ctx;
  const specs = tallyStreamSpecs(nats.names, streamLimitsOf(config));
  const c = config.consumers;
  // The consumer's limits come from the topology, which `tally provision` creates it with.
  const concurrencyMax = commandConcurrencyOf(config, 'work');
  return {
    connection: nats.nc,
    names: nats.names,
    service: 'work',
    commandsStream: specs.find((s) => s.name === nats.names.commandsStream)!,
    deadLetterStream: specs.find((s) => s.name === nats.names.deadLetterStream)!,
    replyCache: replyBucketLimitsOf(config),
    consumer: {
      ackWaitMs: c.ack_wait_ms,
      deliveriesMax: commandDeliveriesOf(config),
      ackPendingMax: Math.max(c.ack_pending_max, concurrencyMax),
      fetchBatch: Math.min(c.fetch_batch, concurrencyMax),
      concurrencyMax,
      pullExpiresMs: 5_000,
      idleHeartbeatMs: 2_000,
      workingIntervalMs: Math.min(c.working_interval_ms, Math.floor(c.ack_wait_ms / 2)),
    },
    retry: { backoffBaseMs: 100, backoffMaxMs: c.nak_delay_max_ms },
    publishTimeoutMs: config.nats.publish_timeout_ms,
    drainTimeoutMs: DRAIN_TIMEOUT_MS,
  };
}

export async function startSubmissionServer(
  rt: OrchestratorRuntime,
  tokens: CapabilityTokenVerifier,
): Promise<BackgroundTask> {
  const app: INestMicroservice = await NestFactory.createMicroservice(
    WorkCommandsModule.register(new WorkSubmission(rt), tokens),
    {
      strategy: new JetStreamCommandServer(submissionServerOptions(rt)),
      logger: rt.ctx.logger,
    },
  );
  await app.listen();
  return { name: 'work-commands', stop: () => app.close() };
}
