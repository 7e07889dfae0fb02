//! Which ranks of a job are here: the one rule for a job's world size and its missing ranks
//! across node reports, used by verify `--merge` and summary `--merge`, so that the two never
//! disagree on whether a job's ranks are all there. (verify on one node asks another question,
//! which ranks that node must hold: its `--ranks`, rank logs or parallel groups.)

use serde::Serialize;

/// Where a run's world size comes from, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorldSizeSource {
    /// Given by the user (`--ranks N`).
    Ranks,
    /// Recorded by the runs themselves (profiler_metadata's parallel groups or distributed
    /// arguments, as the node reports carry them): the largest one.
    Reports,
    /// Nothing records it: one more than the highest rank seen (ranks above it cannot be
    /// missed).
    HighestRank,
}

/// The world size of a run: `given` when there is one, else the largest `recorded`, else one
/// more than the highest rank `seen` (0 without any).
pub fn world_size(
    given: Option<u32>,
    recorded: impl IntoIterator<Item = u32>,
    seen: impl IntoIterator<Item = u32>,
) -> (u32, WorldSizeSource) {
    if let Some(n) = given {
        return (n, WorldSizeSource::Ranks);
    }
    if let Some(n) = recorded.into_iter().max() {
        return (n, WorldSizeSource::Reports);
    }
    let highest = seen.into_iter().max().map_or(0, |m| m + 1);
    (highest, WorldSizeSource::HighestRank)
}

/// The ranks of `0..world` for which `present` is false, in order.
pub fn missing_ranks(world: u32, present: impl Fn(u32) -> bool) -> Vec<u32> {
    (0..world).filter(|&r| !present(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_size_is_given_then_recorded_then_the_highest_rank_seen() {
        assert_eq!(
            world_size(Some(8), [4], [0, 1]),
            (8, WorldSizeSource::Ranks)
        );
        assert_eq!(
            world_size(None, [4, 16], [0, 1]),
            (16, WorldSizeSource::Reports)
        );
        assert_eq!(
            world_size(None, [], [0, 5, 2]),
            (6, WorldSizeSource::HighestRank)
        );
        assert_eq!(world_size(None, [], []), (0, WorldSizeSource::HighestRank));
    }

    #[test]
    fn the_missing_ranks_are_those_of_the_world_not_present() {
        assert_eq!(missing_ranks(5, |r| r % 2 == 0), [1, 3]);
        assert_eq!(missing_ranks(0, |_| false), Vec::<u32>::new());
    }
}
