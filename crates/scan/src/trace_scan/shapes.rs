//! The shapes of the top-level events the grammar accepted: the kinds of an event's structural
//! positions, from its `{` to its `}` (see [`super::blocks::Block::kinds`]). Whether the grammar
//! accepts an event depends on its shape alone, once its scalar tokens are plain numbers and no
//! string is `"process_name"` (stage 1 marks every other token and every such string as a
//! suspect `x`, which no kept shape holds). So an event whose kinds equal a kept shape is valid
//! without the grammar looking at it, and torch_npu's events come in few shapes.

/// Most shapes kept.
const MAX_SHAPES: usize = 32;
/// Longest shape kept, in structural positions.
const MAX_LEN: usize = 4096;

/// Bytes compared at a time (a whole torch_npu event's kinds, mostly).
const CHUNK: usize = 64;
/// Words in a chunk.
const WORDS: usize = CHUNK / 8;
/// The first bytes that index [`Shapes::by_prefix`].
const PREFIX: usize = 32;
/// Shapes kept per prefix.
const BUCKET: usize = 4;

/// A kept shape: its bytes, and its first [`CHUNK`] bytes as little-endian words (padded with
/// zeros) with the mask of the bytes that belong to it.
#[derive(Debug, Default)]
struct Shape {
    first: [u64; WORDS],
    mask: [u64; WORDS],
    bytes: Vec<u8>,
}

/// The first `N` words of `bytes` (which has at least `8 * N` bytes).
#[inline(always)]
fn words<const N: usize>(bytes: &[u8]) -> [u64; N] {
    std::array::from_fn(|i| u64::from_le_bytes(std::array::from_fn(|j| bytes[8 * i + j])))
}

/// A hash of the first [`PREFIX`] bytes of `bytes` (which has at least that many), as an index
/// of [`Shapes::by_prefix`].
#[inline(always)]
fn prefix_hash(bytes: &[u8]) -> usize {
    let w: [u64; PREFIX / 8] = words(bytes);
    let mixed = w[0] ^ w[1].rotate_left(17) ^ w[2].rotate_left(31) ^ w[3].rotate_left(47);
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
}

impl Shape {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether `kinds[at..]` starts with this shape; `kinds` has at least its length of bytes
    /// from `at`.
    #[inline(always)]
    fn at(&self, kinds: &[u8], at: usize) -> bool {
        let Some(chunk) = kinds.get(at..at + CHUNK) else {
            return kinds[at..at + self.len()] == self.bytes[..];
        };
        let w: [u64; WORDS] = words(chunk);
        let differ = (0..WORDS).fold(0, |d, i| d | ((w[i] ^ self.first[i]) & self.mask[i]));
        differ == 0
            && (self.len() <= CHUNK || kinds[at + CHUNK..at + self.len()] == self.bytes[CHUNK..])
    }

    fn set(&mut self, kinds: &[u8]) {
        self.bytes.clear();
        self.bytes.extend_from_slice(kinds);
        let mut chunk = [0u8; CHUNK];
        let head = kinds.len().min(CHUNK);
        chunk[..head].copy_from_slice(&kinds[..head]);
        self.first = words(&chunk);
        self.mask = std::array::from_fn(|i| {
            let bytes = head.saturating_sub(8 * i).min(8);
            if bytes == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * bytes)) - 1
            }
        });
    }
}

/// No shape (in [`Shapes::last`] and [`Shapes::after`]).
const NONE: u8 = u8::MAX;

/// The kept shapes, and which ones the last events had.
#[derive(Debug)]
pub(super) struct Shapes {
    list: Vec<Shape>,
    /// The indexes of the shapes of the two last events, the last one first ([`NONE`] when an
    /// event had none).
    last: [u8; 2],
    /// `after[a * MAX_SHAPES + b]`: the shape of the event that came after events of shapes
    /// `a` then `b` last time; `after[MAX_SHAPES * MAX_SHAPES + b]`: after an event of shape
    /// `b` (see [`Shapes::slot`]).
    after: Box<[u8]>,
    /// The shapes last matched or learnt, by a hash of their first [`PREFIX`] bytes, the
    /// most recent first (shapes that differ only later share a bucket).
    by_prefix: [[u8; BUCKET]; 256],
    /// The next slot to reuse once the list is full.
    evict: usize,
    /// Events matched (for the tests that check that matching happens).
    #[cfg(test)]
    pub(super) matched: u64,
}

impl Default for Shapes {
    fn default() -> Self {
        Self {
            list: Vec::with_capacity(MAX_SHAPES),
            last: [NONE; 2],
            after: vec![NONE; (MAX_SHAPES + 1) * MAX_SHAPES + 1].into_boxed_slice(),
            by_prefix: [[NONE; BUCKET]; 256],
            evict: 0,
            #[cfg(test)]
            matched: 0,
        }
    }
}

impl Shapes {
    /// The length of a kept shape that the first `len` bytes of `kinds` have at `at`; bytes
    /// of `kinds` past `len` may be read, and do not count. Events come in repeating
    /// sequences: the shape that came after the two last events' shapes last time is tried
    /// first, then the one that came after the last event's, then the last one with the same
    /// first bytes, then every shape.
    #[inline(always)]
    pub(super) fn find(&mut self, kinds: &[u8], at: usize, len: usize) -> Option<usize> {
        let room = len - at;
        let two = self.after[self.slot(self.last[1], self.last[0])];
        let i = if self.fits(two, kinds, at, room) {
            // As predicted: only the history moves on.
            self.last = [two, self.last[0]];
            two
        } else {
            let one = self.after[self.slot(NONE, self.last[0])];
            let i = if self.fits(one, kinds, at, room) {
                one
            } else {
                self.search(kinds, at, room)?
            };
            self.follow(i);
            i
        };
        #[cfg(test)]
        {
            self.matched += 1;
        }
        Some(self.list[usize::from(i)].len())
    }

    /// Whether there is a shape `i` and `kinds[at..]` starts with it, `room` bytes long.
    #[inline(always)]
    fn fits(&self, i: u8, kinds: &[u8], at: usize, room: usize) -> bool {
        self.list
            .get(usize::from(i))
            .is_some_and(|s| s.len() <= room && s.at(kinds, at))
    }

    /// [`Shapes::find`] when the predictions failed: the last shapes with the same first
    /// bytes, then every shape.
    #[inline(never)]
    fn search(&mut self, kinds: &[u8], at: usize, room: usize) -> Option<u8> {
        let prefix = kinds.get(at..at + PREFIX).map(prefix_hash);
        if let Some(h) = prefix
            && let Some(k) = (0..BUCKET).find(|&k| self.fits(self.by_prefix[h][k], kinds, at, room))
        {
            let i = self.by_prefix[h][k];
            self.by_prefix[h][..=k].rotate_right(1);
            return Some(i);
        }
        let Some(i) = (0..self.list.len() as u8).find(|&i| self.fits(i, kinds, at, room)) else {
            self.last = [NONE; 2];
            return None;
        };
        if let Some(h) = prefix
            && self.list[usize::from(i)].len() >= PREFIX
        {
            self.remember(h, i);
        }
        Some(i)
    }

    /// Puts shape `i` first in the bucket of prefix hash `h`.
    fn remember(&mut self, h: usize, i: u8) {
        let bucket = &mut self.by_prefix[h];
        bucket.rotate_right(1);
        bucket[0] = i;
    }

    /// The index in [`Shapes::after`] of what came after shapes `a` then `b`.
    #[inline(always)]
    fn slot(&self, a: u8, b: u8) -> usize {
        if b == NONE {
            // The last entry, never written: after no shape, nothing is predicted.
            return (MAX_SHAPES + 1) * MAX_SHAPES;
        }
        usize::from(a.min(MAX_SHAPES as u8)) * MAX_SHAPES + usize::from(b)
    }

    /// The last event had the shape at `i` (which it matched, or was learnt from).
    #[inline(always)]
    fn follow(&mut self, i: u8) {
        let (two, one) = (
            self.slot(self.last[1], self.last[0]),
            self.slot(NONE, self.last[0]),
        );
        if self.last[0] != NONE {
            self.after[two] = i;
            self.after[one] = i;
        }
        self.last = [i, self.last[0]];
    }

    /// Keeps the shape of an event the grammar accepted, unless it holds a suspect or is too
    /// long; once the list is full, the slots are reused in turn.
    pub(super) fn learn(&mut self, kinds: &[u8]) {
        if kinds.len() > MAX_LEN || kinds.contains(&b'x') {
            self.last = [NONE; 2];
            return;
        }
        let i = if self.list.len() < MAX_SHAPES {
            self.list.push(Shape::default());
            self.list.len() - 1
        } else {
            self.evict = (self.evict + 1) % MAX_SHAPES;
            self.evict
        };
        self.list[i].set(kinds);
        if let Some(first) = kinds.get(..PREFIX) {
            self.remember(prefix_hash(first), i as u8);
        }
        self.follow(i as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_kept_shapes_and_skips_suspects() {
        let mut shapes = Shapes::default();
        shapes.learn(br#"{"":n}"#);
        shapes.learn(br#"{"":""}"#);
        shapes.learn(br#"{"":x}"#);
        let find = |shapes: &mut Shapes, kinds: &[u8], len| shapes.find(kinds, 1, len);
        assert_eq!(find(&mut shapes, br#",{"":n},{"#, 9), Some(6));
        // Bytes past the length do not count, and a shape must fit in it.
        assert_eq!(find(&mut shapes, br#",{"":""}junk"#, 8), Some(7));
        assert_eq!(find(&mut shapes, br#",{"":""}"#, 7), None);
        assert_eq!(find(&mut shapes, br#",{"":x}"#, 7), None);
        for i in 0..MAX_SHAPES + 3 {
            shapes.learn(format!("{{{}}}", "\"\":n,".repeat(i + 2)).as_bytes());
        }
        // Full: the slots after the first were reused in turn.
        assert_eq!(shapes.list.len(), MAX_SHAPES);
        assert_eq!(find(&mut shapes, br#",{"":""}"#, 8), None);
        assert_eq!(find(&mut shapes, br#",{"":n}"#, 7), Some(6));
    }

    #[test]
    fn long_shapes_compare_every_byte() {
        let mut shapes = Shapes::default();
        let long: Vec<u8> = format!("{{{}\"\":n}}", "\"\":\"\",".repeat(40)).into_bytes();
        shapes.learn(&long);
        let mut kinds = long.clone();
        kinds.extend_from_slice(&[b'?'; 100]);
        assert_eq!(shapes.find(&kinds, 0, long.len()), Some(long.len()));
        for i in 0..long.len() {
            let mut changed = kinds.clone();
            changed[i] = b'x';
            assert_eq!(shapes.find(&changed, 0, long.len()), None, "byte {i}");
            // Without bytes to spare past the length.
            assert_eq!(
                shapes.find(&changed[..long.len()], 0, long.len()),
                None,
                "byte {i}"
            );
        }
        assert_eq!(shapes.find(&long, 0, long.len()), Some(long.len()));
    }

    #[test]
    fn what_came_after_the_last_shapes_is_remembered() {
        let mut shapes = Shapes::default();
        for shape in [&br#"{"":n}"#[..], br#"{"":""}"#, br#"{}"#] {
            shapes.learn(shape);
        }
        // 0, 1, 2 were learnt in this order; now 0 again.
        assert_eq!(shapes.find(br#"{"":n}"#, 0, 6), Some(6));
        assert_eq!(shapes.last, [0, 2]);
        assert_eq!(shapes.after[shapes.slot(0, 1)], 2);
        assert_eq!(shapes.after[shapes.slot(NONE, 1)], 2);
        assert_eq!(shapes.after[shapes.slot(2, 0)], NONE);
        assert_eq!(shapes.after[shapes.slot(1, 2)], 0);
        assert_eq!(shapes.after[shapes.slot(NONE, 0)], 1);
        assert_eq!(shapes.find(br#"{}"#, 0, 2), Some(2));
        assert_eq!(shapes.after[shapes.slot(NONE, 0)], 2);
        assert_eq!(shapes.after[shapes.slot(2, 0)], 2);
    }
}
