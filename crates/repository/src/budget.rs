//! The token budget and the decode forwards it buys, by the target's rule: one definition for
//! route, plan, patch and collect.

use serde::Serialize;

use crate::definition::BudgetRule;

/// The extra `step()` call the collection guide asks for beyond a window's exact close (the
/// last cycle is saved on a call, so one more keeps it inside the run): plan's minimum calls and
/// the whole-run window both leave it.
pub const MARGIN_STEP_CALLS: u64 = 1;

/// A budget rule with the run config's MTP depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// How budget turns into forwards.
    pub rule: BudgetRule,
    /// MTP speculative steps (`next_n`).
    pub next_n: u64,
}

impl Budget {
    /// Decode forwards (= decode `step()` calls) guaranteed by a budget of `tokens`. For a
    /// data-dependent rule this is the lower bound: every speculative token accepted.
    pub fn guaranteed_forwards(self, tokens: u64) -> u64 {
        match self.rule {
            BudgetRule::ForwardsEqualBudget => tokens,
            BudgetRule::ForwardsBudgetMinusOne => tokens.saturating_sub(1),
            BudgetRule::Tokens | BudgetRule::DataDependent => {
                tokens.saturating_sub(1) / self.next_n.saturating_add(1)
            }
        }
    }

    /// The decode steps a window that skips `skip_first` steps can record within a budget of
    /// `tokens` and still close with the margin: the guaranteed forwards less `skip_first` and
    /// [`MARGIN_STEP_CALLS`]; `None` when that leaves no step.
    pub fn whole_run_active(self, tokens: u64, skip_first: u64) -> Option<u64> {
        let used = skip_first.checked_add(MARGIN_STEP_CALLS)?;
        self.guaranteed_forwards(tokens)
            .checked_sub(used)
            .filter(|n| *n > 0)
    }

    /// The smallest budget that guarantees `forwards` decode forwards.
    pub fn min_budget(self, forwards: u64) -> u64 {
        match self.rule {
            BudgetRule::ForwardsEqualBudget => forwards,
            BudgetRule::ForwardsBudgetMinusOne => forwards.saturating_add(1),
            BudgetRule::Tokens | BudgetRule::DataDependent => {
                1u64.saturating_add(self.next_n.saturating_add(1).saturating_mul(forwards))
            }
        }
    }

    /// The rule in words, with the assumption npuprof makes when the count depends on the data.
    pub fn describe(self) -> String {
        match self.rule {
            BudgetRule::ForwardsEqualBudget => {
                "decode forwards = max_new_tokens, whatever next_n".to_owned()
            }
            BudgetRule::ForwardsBudgetMinusOne => "decode forwards = max_new_tokens - 1".to_owned(),
            BudgetRule::Tokens => format!(
                "stops on tokens: up to next_n + 1 = {} tokens per forward, so at least \
                 floor((max_new_tokens - 1) / {}) forwards",
                self.next_n + 1,
                self.next_n + 1
            ),
            BudgetRule::DataDependent => format!(
                "data-dependent (draft-model acceptance, EOS): npuprof assumes every speculative \
                 token is accepted ({} tokens per round), the fewest rounds possible",
                self.next_n + 1
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_shared_engine_needs_34_for_a_30_step_window_whatever_next_n() {
        let b = Budget {
            rule: BudgetRule::ForwardsEqualBudget,
            next_n: 1,
        };
        // skip_first 3 + active 30 closes at 33 calls; one more as margin.
        assert_eq!(b.min_budget(34), 34);
        assert_eq!(b.guaranteed_forwards(32), 32);
    }

    #[test]
    fn the_whole_run_leaves_skip_first_and_the_margin() {
        let b = Budget {
            rule: BudgetRule::ForwardsEqualBudget,
            next_n: 1,
        };
        // 32 forwards, skip_first 3, one of margin: 28 steps (closing at 31 of 32 calls).
        assert_eq!(b.whole_run_active(32, 3), Some(28));
        assert_eq!(b.whole_run_active(4, 3), None, "nothing left to record");
        assert_eq!(b.whole_run_active(5, 3), Some(1));
        assert_eq!(b.whole_run_active(5, u64::MAX), None);
        let tokens = Budget {
            rule: BudgetRule::Tokens,
            next_n: 1,
        };
        // (65 - 1) / 2 = 32 forwards.
        assert_eq!(tokens.whole_run_active(65, 3), Some(28));
    }

    #[test]
    fn each_rule_round_trips_its_minimum() {
        for rule in [
            BudgetRule::ForwardsEqualBudget,
            BudgetRule::ForwardsBudgetMinusOne,
            BudgetRule::Tokens,
            BudgetRule::DataDependent,
        ] {
            for next_n in [0, 1, 3] {
                let b = Budget { rule, next_n };
                for forwards in [0, 1, 7, 21, 1000] {
                    let min = b.min_budget(forwards);
                    assert!(b.guaranteed_forwards(min) >= forwards, "{rule:?} {next_n}");
                    if min > 0 {
                        assert!(b.guaranteed_forwards(min - 1) < forwards.max(1), "{rule:?}");
                    }
                }
            }
        }
        let tokens = Budget {
            rule: BudgetRule::Tokens,
            next_n: 1,
        };
        assert_eq!(tokens.min_budget(34), 69);
    }
}
