export type {
  DispatchOutcome,
  DispatchRequest,
  FailureDomain,
  ProviderGateway,
  Settlement,
  Usage,
} from './provider-gateway.types.js';
export type { ModelPrice, ProviderKind, ProviderSettings } from './provider-config.types.js';
