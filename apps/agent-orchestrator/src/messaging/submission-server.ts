// Serves the `work` commands (`<ns>.cmd.work.submit`) as a Nest microservice of its own on
// the host's NATS connection. It is not connected to the HTTP app: a hybrid app inherits
// the HTTP validation pipe and problem+json filter, which would turn a validation failure
// into a retried "internal error" instead of a named-field answer.
import { Module, type DynamicModule, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { streamLimitsOf, type BackgroundTask, type TallyConfig } from '@tally/platform-app';
import { tallyStreamSpecs, type ReplyBucketLimits } from '@tally/platform-jetstream';
import { JetStreamCommandServer, type JetStreamCommandServerOptions } from '@tally/platform-nest';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';
import { WorkSubmission } from '../work/work-submission.js';
import { WorkCommandsController } from './work-commands.controller.js';
import type { CapabilityTokenVerifier } from '@tally/directory-service';
import { CAPABILITY_TOKENS } from '../http/work-scope.js';

const CONCURRENCY_MAX = 64;
const DRAIN_TIMEOUT_MS = 10_000;

/**
 * The reply cache is one bucket shared with the budget authority, which verifies its
 * settings at start-up, so both services must derive the same limits from config
 * (the authority's derivation: 24 h TTL, at most 256 MiB, values up to one message).
 */
export function replyCacheLimitsOf(config: TallyConfig): ReplyBucketLimits {
  return {
    ttlMs: Math.max(24 * 3_600_000, config.streams.duplicate_window_ms),
    replicas: config.streams.replicas,
    maxBytes: Math.min(256 * 1024 * 1024, config.streams.queue_max_bytes),
    maxValueSizeBytes: config.streams.max_msg_size_bytes,
  };
}

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
  return {
    connection: nats.nc,
    names: nats.names,
    service: 'work',
    commandsStream: specs.find((s) => s.name === nats.names.commandsStream)!,
    deadLetterStream: specs.find((s) => s.name === nats.names.deadLetterStream)!,
    replyCache: replyCacheLimitsOf(config),
    consumer: {
      ackWaitMs: c.ack_wait_ms,
      deliveriesMax: Math.max(2, c.deliveries_max),
      ackPendingMax: Math.max(c.ack_pending_max, CONCURRENCY_MAX),
      fetchBatch: Math.min(c.fetch_batch, CONCURRENCY_MAX),
      concurrencyMax: CONCURRENCY_MAX,
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
