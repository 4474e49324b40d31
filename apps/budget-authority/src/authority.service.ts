// The budget-authority's composition: which projections, HTTP controllers, command
// handlers and background loops it runs on the shared service host.
import { Module, type DynamicModule } from '@nestjs/common';
import type { ServiceDefinition, TallyConfig } from '@tally/platform-app';
import { authorityOpenApi } from './openapi.js';

@Module({})
class AuthorityModule {}

export async function authorityService(config: TallyConfig): Promise<ServiceDefinition> {
  return {
    service: 'budget-authority',
    httpPort: config.authority.http_port,
    database: { entities: [], migrations: [] },
    projections: () => [],
    openapi: authorityOpenApi,
    module: (): DynamicModule => ({ module: AuthorityModule }),
  };
}
