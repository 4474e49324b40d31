// The agent-orchestrator's composition: projections, HTTP controllers, the submission
// subject and the dispatch workers, on the shared service host.
import { Module, type DynamicModule } from '@nestjs/common';
import type { ServiceDefinition, TallyConfig } from '@tally/platform-app';
import { orchestratorOpenApi } from './openapi.js';

@Module({})
class OrchestratorModule {}

export async function orchestratorService(config: TallyConfig): Promise<ServiceDefinition> {
  return {
    service: 'agent-orchestrator',
    httpPort: config.orchestrator.http_port,
    database: { entities: [], migrations: [] },
    projections: () => [],
    openapi: orchestratorOpenApi,
    module: (): DynamicModule => ({ module: OrchestratorModule }),
  };
}
