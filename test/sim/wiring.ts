// The composition root of the simulation: the apps' own parts on the budget path, plugged
// into the simulated world. The orchestrator's budget client and its admission-proof check
// run as they are; the authority's core handlers are the budget command controller's
// mapping (wire DTO -> command -> reply) without Nest around it.
import {
  authorizationFromWire,
  currencyRefusalOf,
  type BudgetAuthority,
  type SignedReceipt,
} from '@tally/budget-application';
import {
  AdmitCommandDto,
  IncreaseHoldDto,
  passesFast,
  SettleCommandDto,
  validatePlain,
  type Constructor,
} from '@tally/contracts';
import { StreamFull } from '@tally/eventing';
import { validationError, type CommandReply } from '@tally/platform-nest';
import type { SimWiring } from '@tally/simulation';
import { AdmissionProofVerifier } from '../../apps/agent-orchestrator/src/budget/admission-proofs.js';
import { JetStreamBudgetPort } from '../../apps/agent-orchestrator/src/budget/jetstream-budget.port.js';
import {
  decisionToWire,
  toAdmitCommand,
  toIncreaseCommand,
  toSettleCommand,
  wireJson,
} from '../../apps/budget-authority/src/command-mapping.js';

/** The orchestrator's authority_keys_cooldown_ms default; no authority URL, so only the known keys count. */
const KEYS_COOLDOWN_MS = 60_000;

export const appWiring: SimWiring = {
  budgetPort: (sender, options, proofs) => new JetStreamBudgetPort(sender, options, proofs),
  proofCheck: (keys, nowMs) =>
    new AdmissionProofVerifier(keys, { cooldownMs: KEYS_COOLDOWN_MS, timeoutMs: 5_000, nowMs }),
  async handle(authority, command, commandId, payload) {
    try {
      return await handleBudget(authority, command, commandId, payload);
    } catch (error) {
      // refuseWhenFull: a write that met a full stream is a final, named refusal.
      if (error instanceof StreamFull) return rejected('stream_full', error.message);
      throw error;
    }
  },
};

async function handleBudget(
  authority: BudgetAuthority,
  command: string,
  commandId: string,
  payload: unknown,
): Promise<CommandReply<unknown>> {
  switch (command) {
    case 'admit': {
      const dto = validated(AdmitCommandDto, payload);
      if (!dto.ok) return dto.reply;
      const mapped = toAdmitCommand(dto.value, commandId);
      if (!mapped.ok) return { ok: false, error: validationError(mapped.errors) };
      return { ok: true, value: decisionToWire(await authority.admit(mapped.command)) };
    }
    case 'settle': {
      const dto = validated(SettleCommandDto, payload);
      if (!dto.ok) return dto.reply;
      const mapped = toSettleCommand(dto.value, commandId, authorizationFromWire(dto.value));
      if (!mapped.ok) return { ok: false, error: validationError(mapped.errors) };
      const result = await authority.settle(mapped.command);
      return otherCurrency(result.receipt) ?? { ok: true, value: wireJson({ receipt: result.receipt }) };
    }
    case 'increase': {
      const dto = validated(IncreaseHoldDto, payload);
      if (!dto.ok) return dto.reply;
      const result = await authority.increase(
        toIncreaseCommand(dto.value, commandId, authorizationFromWire(dto.value)),
      );
      return otherCurrency(result.receipt) ?? { ok: true, value: wireJson(result) };
    }
    default:
      return { ok: false, error: { type: 'unavailable', message: `no handler for ${command}` } };
  }
}

/** The command validation pipe: the compiled fast accept, else the full DTO check with its field errors. */
function validated<T extends object>(
  dto: Constructor<T>,
  payload: unknown,
): { ok: true; value: T } | { ok: false; reply: CommandReply<unknown> } {
  if (passesFast(dto, payload)) return { ok: true, value: payload as T };
  const decoded = validatePlain(dto, payload);
  return decoded.ok ? decoded : { ok: false, reply: { ok: false, error: validationError(decoded.errors) } };
}

function otherCurrency(receipt: SignedReceipt): CommandReply<unknown> | undefined {
  const refusal = currencyRefusalOf(receipt);
  return refusal && rejected('currency_mismatch', refusal.message);
}

function rejected(reason: string, message: string): CommandReply<unknown> {
  return { ok: false, error: { type: 'rejected', reason, message, detail: { type: reason, message } } };
}
