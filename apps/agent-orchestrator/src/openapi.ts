// The agent-orchestrator's OpenAPI document, served at /openapi.json.
export const orchestratorOpenApi: Record<string, unknown> = {
  openapi: '3.1.0',
  info: { title: 'Tally agent-orchestrator', version: '0.1.0' },
  paths: {},
};
