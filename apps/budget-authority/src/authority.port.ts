// What the HTTP and command adapters need from the budget application: one port, so the
// adapters stay thin and the composition root decides how the application is built.
import type {
  GrantPeriodUsage,
  IncreaseCommand,
  IncreaseResult,
  AdmitCommand,
  AdmitDecision,
  IssueCapabilityCommand,
  IssuedCapability,
  PublicKeyDescription,
  Revoked,
  SettleCommand,
  SettleResult,
} from '@tally/budget-application';
import type { Rejection } from '@tally/budget-domain';

export type Refusable<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly rejection: Rejection };

export interface AuthorityPort {
  issue(command: IssueCapabilityCommand): Promise<Refusable<IssuedCapability>>;
  revoke(capabilityId: string): Promise<Refusable<Revoked>>;
  admit(command: AdmitCommand): Promise<AdmitDecision>;
  settle(command: SettleCommand): Promise<SettleResult>;
  increase(command: IncreaseCommand): Promise<IncreaseResult>;
  /** Each grant with a reset: the period that contains `atMs` (default now) and its figures. */
  periodUsage(capabilityId: string, atMs?: number, previous?: boolean): Promise<GrantPeriodUsage[] | undefined>;
  keys(): PublicKeyDescription[];
  /** Verifies and consumes an execution nonce outside an Admit (e.g. at the tool server). */
  redeemNonce(token: string): Promise<boolean>;
}

export const AUTHORITY_PORT = Symbol('AUTHORITY_PORT');
