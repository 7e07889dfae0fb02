//! UTF-8 validation of a stream of chunks: a sequence cut by a chunk boundary is carried over
//! (at most 3 bytes), so the first invalid byte is found at the same offset however the input is
//! split. An incomplete sequence at EOF is not an error here (the file is cut).

/// The carried bytes of a sequence that a chunk boundary cut.
#[derive(Debug, Default)]
pub(super) struct Utf8Stream {
    carry: [u8; 4],
    carry_len: usize,
}

/// How many bytes the sequence that starts with `lead` has (1 for anything that is not a lead).
fn width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

impl Utf8Stream {
    /// Whether a cut sequence is pending (the next chunk must be checked even if it is ASCII).
    pub(super) fn pending(&self) -> bool {
        self.carry_len > 0
    }

    /// Checks the next chunk, which starts at offset `base`; returns the offset of the first
    /// byte of the first invalid sequence.
    pub(super) fn check(&mut self, buf: &[u8], base: u64) -> Option<u64> {
        let mut start = 0;
        if self.carry_len > 0 {
            let carried = self.carry_len as u64;
            let want = width(self.carry[0]) - self.carry_len;
            let take = want.min(buf.len());
            let mut tmp = [0u8; 4];
            tmp[..self.carry_len].copy_from_slice(&self.carry[..self.carry_len]);
            tmp[self.carry_len..self.carry_len + take].copy_from_slice(&buf[..take]);
            let n = self.carry_len + take;
            match std::str::from_utf8(&tmp[..n]) {
                Ok(_) => self.carry_len = 0,
                Err(e) if e.error_len().is_some() => {
                    return Some(base - carried + e.valid_up_to() as u64);
                }
                Err(_) => {
                    self.carry = tmp;
                    self.carry_len = n;
                    return None;
                }
            }
            start = take;
        }
        let rest = &buf[start..];
        // simdutf8's vector check first; std's, for the details, only when it fails.
        if simdutf8::basic::from_utf8(rest).is_ok() {
            return None;
        }
        match std::str::from_utf8(rest) {
            Ok(_) => None,
            Err(e) if e.error_len().is_some() => Some(base + (start + e.valid_up_to()) as u64),
            Err(e) => {
                let tail = &rest[e.valid_up_to()..];
                self.carry[..tail.len()].copy_from_slice(tail);
                self.carry_len = tail.len();
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_error(doc: &[u8], size: usize) -> Option<u64> {
        let mut s = Utf8Stream::default();
        let mut base = 0;
        for chunk in doc.chunks(size) {
            if let Some(at) = s.check(chunk, base) {
                return Some(at);
            }
            base += chunk.len() as u64;
        }
        None
    }

    #[test]
    fn agrees_with_from_utf8_on_every_split() {
        let docs: [&[u8]; 6] = [
            "aé€😀z".as_bytes(),
            b"ab\xC3(cd",
            b"\xE2\x82",
            b"x\xF0\x9F\x98\x80\xF0\x9F\x98y",
            b"\xE2\x41\x42\x43",
            b"ok\x80",
        ];
        for doc in docs {
            let want = match std::str::from_utf8(doc) {
                Err(e) if e.error_len().is_some() => Some(e.valid_up_to() as u64),
                _ => None,
            };
            for size in 1..=doc.len() {
                assert_eq!(first_error(doc, size), want, "{doc:?} in chunks of {size}");
            }
        }
    }
}
