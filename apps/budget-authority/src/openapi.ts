// The budget-authority's OpenAPI document, served at /openapi.json.
export const authorityOpenApi: Record<string, unknown> = {
  openapi: '3.1.0',
  info: { title: 'Tally budget-authority', version: '0.1.0' },
  paths: {},
};
