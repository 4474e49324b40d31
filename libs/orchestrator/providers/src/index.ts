export type {
  DispatchOutcome,
  DispatchRequest,
  FailureDomain,
  ProviderGateway,
  Settlement,
  Usage,
} from './provider-gateway.types.js';
