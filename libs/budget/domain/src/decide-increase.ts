// Incremental holds (POST /v1/holds/{id}/increase): an open hold is raised within every
// limit of its chain, in the period it was authorized in, up to a number of increases,
// like an incremental authorization on a card. Each increase is its own fact.
import type { IncreaseHold } from './commands.js';
import { countedTokens, roomOf } from './decide-policy.js';
import { accept, reject, type Decision } from './decision.js';
import { BUDGET_OVERRUN, verifyCapability } from './decide-hold.js';
import { currencyMismatch } from './model.js';
import { viewAt, windowTime, EMPTY_WINDOW } from './rate-window.js';
import { usageKey, type TreeState } from './state.js';

export const increaseEventId = (holdId: string, ordinal: number): string => `${holdId}:increase:${ordinal}`;

export function decideIncrease(command: IncreaseHold, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (hold.preflight || !(hold.status === 'authorized' || hold.status === 'captured'))
    return reject('hold_not_open', `hold ${hold.hold_id} is ${hold.status}: only an open hold can be increased`);
  if (hold.status === 'authorized' && hold.expires_at_ms <= command.now_ms)
    return reject('hold_expired', 'budget hold expired');
  const capability = verifyCapability(state, hold.capability_id, undefined, command.now_ms);
  if ('code' in capability) return { ok: false, rejection: capability };
  const done = hold.increases ?? 0;
  if (done >= command.increases_max)
    return reject('increase_limit_reached', `hold ${hold.hold_id} was already increased ${done} times`);
  if (command.amount_units <= 0n) return reject('cost_required', 'an increase must be more than 0 units');
  const mismatch = currencyMismatch(hold, command.currency);
  if (mismatch) return reject('currency_mismatch', mismatch);
  const exposure = hold.exposure_units + command.amount_units;
  for (const ref of hold.chain) {
    const grant = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!;
    if (grant.max_cost_per_invocation !== undefined && exposure > grant.max_cost_per_invocation)
      return reject('requested_cost_exceeds_max_per_invocation', 'the increased hold exceeds max_cost_per_invocation');
  }
  const room = roomOf(state, hold.chain, hold.periods, hold);
  // Less room than the hold already takes: an overrun booked past a limit (ADR 0043) holds the grant shut.
  if (room !== undefined && room < hold.exposure_units) return reject('budget_overrun', BUDGET_OVERRUN);
  if (room !== undefined && exposure > room)
    return reject('total_cost_limit_reached', `the increased hold needs ${exposure}; at most ${room} fits`);
  const tokens = command.tokens ?? 0;
  if (tokens > 0) {
    const refused = checkTokens(state, hold.chain, tokens, command.now_ms);
    if (refused) return refused;
  }
  return accept({
    type: 'HoldIncreased',
    event_id: increaseEventId(hold.hold_id, done + 1),
    data: {
      kind: 'increase_exposure',
      hold_id: hold.hold_id,
      increase: done + 1,
      ...(command.command_id === undefined ? {} : { command_id: command.command_id }),
      amount_units: command.amount_units,
      exposure_units: exposure,
      ...(command.tokens === undefined ? {} : { tokens: command.tokens }),
      at_ms: command.now_ms,
    },
  });
}

/** More tokens on an open hold must fit tokens_per_minute of every window it counts in. */
function checkTokens(
  state: TreeState,
  chain: readonly { capability_id: string; grant_index: number }[],
  tokens: number,
  atMs: number,
): Decision | undefined {
  const counted = countedTokens(state);
  for (const ref of chain) {
    const tpm = state.capabilities.get(ref.capability_id)!.grants[ref.grant_index]!.rate_limits?.tokens_per_minute;
    if (tpm === undefined) continue;
    const window = state.windows.get(usageKey(ref)) ?? EMPTY_WINDOW;
    const view = viewAt(window, windowTime(window, atMs), counted);
    if (view.tokens + tokens > tpm)
      return {
        ok: false,
        rejection: { code: 'rate_limited', message: `tokens_per_minute ${tpm} reached`, retry_after_ms: 1_000 },
      };
  }
  return undefined;
}
