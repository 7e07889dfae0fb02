//! Byte-range edits on a text, in the style of ruff's `Edit`: every change is a range of the
//! original text plus its replacement, and a set of edits is sorted and disjoint by construction.

use std::ops::Range;

use serde::Serialize;

/// One change: replace the bytes `range` of the original text by `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edit {
    /// Byte range in the original text (empty for an insertion).
    pub range: Range<usize>,
    /// The new text for that range (empty for a deletion).
    pub replacement: String,
}

impl Edit {
    /// Replaces `range` by `replacement`.
    pub fn replace(range: Range<usize>, replacement: impl Into<String>) -> Self {
        Self {
            range,
            replacement: replacement.into(),
        }
    }

    /// Inserts `text` at byte offset `at`.
    pub fn insert(at: usize, text: impl Into<String>) -> Self {
        Self {
            range: at..at,
            replacement: text.into(),
        }
    }

    /// The 1-based line of `original` where the edit starts.
    pub fn line_in(&self, original: &str) -> usize {
        crate::text::line_number(original, self.range.start.min(original.len()))
    }

    /// Whether the edit changes nothing when applied to `original`.
    fn is_noop(&self, original: &str) -> bool {
        original.get(self.range.clone()) == Some(self.replacement.as_str())
    }
}

/// Why a set of edits could not be built or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// Two edits touch the same bytes (or insert at the same offset).
    #[error("overlapping edits: {first:?} and {second:?}")]
    Overlap {
        /// The earlier range.
        first: Range<usize>,
        /// The range that overlaps it.
        second: Range<usize>,
    },
    /// An edit's range is reversed, outside the text, or splits a UTF-8 character.
    #[error("edit range {range:?} is not valid for a text of {len} bytes")]
    OutOfBounds {
        /// The offending range.
        range: Range<usize>,
        /// The text length.
        len: usize,
    },
}

/// A sorted, disjoint set of edits on one text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Edits(Vec<Edit>);

impl Edits {
    /// Builds the set, dropping edits that change nothing in `original`; errors if two edits
    /// overlap, or if a range does not fit `original`.
    pub fn new(original: &str, edits: Vec<Edit>) -> Result<Self, EditError> {
        let mut edits: Vec<Edit> = edits.into_iter().filter(|e| !e.is_noop(original)).collect();
        for edit in &edits {
            let r = &edit.range;
            if r.start > r.end || original.get(r.clone()).is_none() {
                return Err(EditError::OutOfBounds {
                    range: r.clone(),
                    len: original.len(),
                });
            }
        }
        edits.sort_by_key(|e| (e.range.start, e.range.end));
        for pair in edits.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            // Two insertions at one offset have no defined order: refuse them too.
            if b.range.start < a.range.end || b.range.start == a.range.start {
                return Err(EditError::Overlap {
                    first: a.range.clone(),
                    second: b.range.clone(),
                });
            }
        }
        Ok(Self(edits))
    }

    /// The edits, sorted by position.
    pub fn as_slice(&self) -> &[Edit] {
        &self.0
    }

    /// Whether there is nothing to change.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Applies the edits to `original` (the text they were built for).
    pub fn apply(&self, original: &str) -> String {
        let delta: usize = self.0.iter().map(|e| e.replacement.len()).sum();
        let mut out = String::with_capacity(original.len() + delta);
        let mut last = 0;
        for edit in &self.0 {
            out.push_str(&original[last..edit.range.start]);
            out.push_str(&edit.replacement);
            last = edit.range.end;
        }
        out.push_str(&original[last..]);
        out
    }

    /// The edits that turn `self.apply(original)` back into `original`.
    pub fn inverse(&self, original: &str) -> Edits {
        let mut shift: isize = 0;
        let mut inverse = Vec::with_capacity(self.0.len());
        for edit in &self.0 {
            let start = edit.range.start.saturating_add_signed(shift);
            let end = start + edit.replacement.len();
            inverse.push(Edit::replace(start..end, &original[edit.range.clone()]));
            shift += edit.replacement.len() as isize - edit.range.len() as isize;
        }
        Edits(inverse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_and_inverse_round_trip() {
        let text = "abc def ghi";
        let edits = Edits::new(
            text,
            vec![
                Edit::replace(8..11, "XY"),
                Edit::insert(0, ">> "),
                Edit::replace(4..7, ""),
            ],
        )
        .expect("disjoint");
        let new = edits.apply(text);
        assert_eq!(new, ">> abc  XY");
        assert_eq!(edits.inverse(text).apply(&new), text);
    }

    #[test]
    fn overlaps_are_refused() {
        let err = Edits::new(
            "abcdef",
            vec![Edit::replace(0..3, "x"), Edit::replace(2..4, "y")],
        );
        assert_eq!(
            err,
            Err(EditError::Overlap {
                first: 0..3,
                second: 2..4
            })
        );
        let err = Edits::new("abcdef", vec![Edit::insert(2, "x"), Edit::insert(2, "y")]);
        assert!(matches!(err, Err(EditError::Overlap { .. })));
    }

    #[test]
    fn an_edit_names_the_line_where_it_starts() {
        let text = "a\nbb\nc";
        assert_eq!(Edit::insert(0, "x").line_in(text), 1);
        assert_eq!(Edit::replace(2..4, "y").line_in(text), 2);
        assert_eq!(Edit::insert(text.len(), "z").line_in(text), 3);
        // A start past the text (the caller's mistake) is read at its end.
        assert_eq!(Edit::insert(99, "z").line_in(text), 3);
    }

    #[test]
    fn out_of_bounds_and_noops() {
        assert!(matches!(
            Edits::new("ab", vec![Edit::replace(1..5, "x")]),
            Err(EditError::OutOfBounds { .. })
        ));
        let edits = Edits::new("ab", vec![Edit::replace(0..1, "a")]).expect("valid");
        assert!(edits.is_empty());
    }
}
