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

/// Bytes compared at a time.
const CHUNK: usize = 32;

/// A kept shape, in chunks of little-endian words (the last one padded with zeros).
#[derive(Debug, Default)]
struct Shape {
    chunks: Vec<[u64; 4]>,
    /// The bytes of the last chunk that belong to the shape.
    tail: [u64; 4],
    len: usize,
    /// The index of the shape of the event that came after this one last time.
    next: usize,
}

/// The chunk of `bytes` as words.
#[inline(always)]
fn words(bytes: &[u8; CHUNK]) -> [u64; 4] {
    std::array::from_fn(|i| u64::from_le_bytes(std::array::from_fn(|j| bytes[8 * i + j])))
}

impl Shape {
    /// Whether `kinds[at..]` starts with this shape; `kinds` has at least `len` bytes from `at`.
    #[inline(always)]
    fn at(&self, kinds: &[u8], at: usize) -> bool {
        let Some(bytes) = kinds.get(at..at + CHUNK * self.chunks.len()) else {
            return self.slow_at(kinds, at);
        };
        let (last, body) = self.chunks.split_last().unwrap_or((&[0; 4], &[]));
        let (rest, tail) = bytes.split_at(CHUNK * body.len());
        let differ = |a: [u64; 4], b: &[u64; 4], mask: &[u64; 4]| {
            (0..4).fold(0, |d, i| d | ((a[i] ^ b[i]) & mask[i])) != 0
        };
        for (chunk, want) in rest.chunks_exact(CHUNK).zip(body) {
            if differ(
                words(chunk.try_into().unwrap_or(&[0; CHUNK])),
                want,
                &[u64::MAX; 4],
            ) {
                return false;
            }
        }
        !differ(
            words(tail.try_into().unwrap_or(&[0; CHUNK])),
            last,
            &self.tail,
        )
    }

    /// [`Shape::at`] where fewer than the padded length of bytes follow `at`.
    #[cold]
    fn slow_at(&self, kinds: &[u8], at: usize) -> bool {
        let shape = self.chunks.iter().flatten().flat_map(|w| w.to_le_bytes());
        kinds[at..at + self.len]
            .iter()
            .zip(shape)
            .all(|(a, b)| *a == b)
    }

    fn set(&mut self, kinds: &[u8]) {
        self.len = kinds.len();
        self.chunks.clear();
        self.chunks.extend(kinds.chunks(CHUNK).map(|c| {
            let mut chunk = [0u8; CHUNK];
            chunk[..c.len()].copy_from_slice(c);
            words(&chunk)
        }));
        let used = kinds.len() - CHUNK * (self.chunks.len() - 1);
        self.tail = std::array::from_fn(|i| {
            let bytes = used.saturating_sub(8 * i).min(8);
            if bytes == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * bytes)) - 1
            }
        });
    }
}

/// The kept shapes, and which one the last event had.
#[derive(Debug)]
pub(super) struct Shapes {
    list: Vec<Shape>,
    /// The index of the last event's shape (`usize::MAX` when it had none).
    last: usize,
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
            last: usize::MAX,
            evict: 0,
            #[cfg(test)]
            matched: 0,
        }
    }
}

impl Shapes {
    /// The length of a kept shape that the first `len` bytes of `kinds` have at `at`; bytes
    /// of `kinds` past `len` may be read, and do not count. The shape that followed the last
    /// event's shape last time is tried first: events come in repeating sequences.
    #[inline(always)]
    pub(super) fn find(&mut self, kinds: &[u8], at: usize, len: usize) -> Option<usize> {
        let room = len - at;
        let fits = |s: &Shape| s.len <= room && s.at(kinds, at);
        let guess = self.list.get(self.last).map_or(usize::MAX, |s| s.next);
        let i = if self.list.get(guess).is_some_and(fits) {
            self.last = guess;
            guess
        } else {
            let Some(i) = self.list.iter().position(fits) else {
                self.last = usize::MAX;
                return None;
            };
            self.follow(i);
            i
        };
        #[cfg(test)]
        {
            self.matched += 1;
        }
        Some(self.list[i].len)
    }

    /// The last event had the shape at `i` (which it matched, or was learnt from).
    fn follow(&mut self, i: usize) {
        if let Some(prev) = self.list.get_mut(self.last) {
            prev.next = i;
        }
        self.last = i;
    }

    /// Keeps the shape of an event the grammar accepted, unless it holds a suspect or is too
    /// long; once the list is full, the slots are reused in turn.
    pub(super) fn learn(&mut self, kinds: &[u8]) {
        if kinds.len() > MAX_LEN || kinds.contains(&b'x') {
            self.last = usize::MAX;
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
        self.list[i].next = usize::MAX;
        self.follow(i);
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
    fn the_shape_that_followed_last_time_is_tried_first() {
        let mut shapes = Shapes::default();
        for shape in [&br#"{"":n}"#[..], br#"{"":""}"#, br#"{}"#] {
            shapes.learn(shape);
        }
        // `{}` was followed by nothing yet; after `{"":n}` came `{"":""}`.
        assert_eq!(shapes.find(br#"{"":n}"#, 0, 6), Some(6));
        assert_eq!(shapes.last, 0);
        assert_eq!(shapes.list[0].next, 1);
        assert_eq!(shapes.find(br#"{}"#, 0, 2), Some(2));
        assert_eq!(shapes.list[1].next, 2);
    }
}
