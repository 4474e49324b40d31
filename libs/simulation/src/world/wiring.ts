// What the composition root plugs into the simulation: the parts of the two apps that sit
// on the budget path but live in the apps, which a library may not import. The simulation
// runs them as they are: the orchestrator's budget client (JetStreamBudgetPort) with its
// admission-proof check, and the authority's command handlers (wire DTO -> command -> reply).
import type { BudgetAuthority } from '@tally/budget-application';
import type { AdmissionProofWire, BudgetPort } from '@tally/orchestrator-application';
import type { CommandReply, CommandSender } from '@tally/platform-nest';

/** The orchestrator's check of an admission proof (AdmissionProofCheck). */
export interface ProofCheck {
  verify(proof: AdmissionProofWire, holdId: string): Promise<boolean>;
}

/** The keys an orchestrator knows (the directory's published keys). */
export interface KnownKeys {
  verify(value: unknown, signature: string, keyId: string): boolean;
  list(): readonly { readonly key_id: string }[];
}

export interface SimWiring {
  /** The orchestrator's BudgetPort over a command sender. */
  budgetPort(
    sender: CommandSender,
    options: { replyTimeoutMs: number; attemptsMax: number },
    proofs: ProofCheck,
  ): BudgetPort;
  proofCheck(keys: KnownKeys, nowMs: () => number): ProofCheck;
  /** One `budget` request as the authority's command controller answers it; a thrown error becomes `unavailable`. */
  handle(
    authority: BudgetAuthority,
    command: string,
    commandId: string,
    payload: unknown,
  ): Promise<CommandReply<unknown>>;
}
