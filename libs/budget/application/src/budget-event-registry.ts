// The EventRegistry of the budget stream: every domain event type with its wire DTO.
import { BUDGET_EVENT_TYPES, type BudgetEventType } from '@tally/budget-domain';
import { EventRegistry, type Constructor } from '@tally/contracts';
import * as Dto from './budget-event.dtos.js';

const PAYLOADS: Readonly<Record<BudgetEventType, Constructor<object>>> = {
  CapabilityIssued: Dto.CapabilityIssuedDto,
  CapabilityRevoked: Dto.CapabilityRevokedDto,
  HoldAuthorized: Dto.HoldAuthorizedDto,
  InvocationCaptured: Dto.InvocationCapturedDto,
  HoldReversed: Dto.HoldReversedDto,
  CaptureCancelled: Dto.CaptureCancelledDto,
  ExposureReleased: Dto.ExposureReleasedDto,
  SpendSettled: Dto.SpendSettledDto,
  HoldRetained: Dto.HoldRetainedDto,
  InvocationAdmitted: Dto.HoldStepDto,
  LeaseReserved: Dto.LeaseReservedDto,
  LeaseReleased: Dto.LeaseReleasedDto,
  PaymentStepRecorded: Dto.PaymentStepRecordedDto,
  NonceIssued: Dto.NonceIssuedDto,
  NonceConsumed: Dto.NonceConsumedDto,
  AmbiguityRecorded: Dto.AmbiguityRecordedDto,
  AmbiguityResolved: Dto.AmbiguityResolvedDto,
  ReceiptRecorded: Dto.ReceiptRecordedDto,
  HoldIncreased: Dto.HoldIncreasedDto,
  BudgetThresholdCrossed: Dto.BudgetThresholdCrossedDto,
  BudgetExhausted: Dto.BudgetExhaustedDto,
  BudgetOverrun: Dto.BudgetOverrunDto,
  SpendCorrected: Dto.SpendCorrectedDto,
};

export const BUDGET_EVENT_SCHEMA_VERSION = 1;

export function budgetEventRegistry(): EventRegistry {
  return new EventRegistry(
    BUDGET_EVENT_TYPES.map((type) => ({ type, version: BUDGET_EVENT_SCHEMA_VERSION, payload: PAYLOADS[type] })),
  );
}
