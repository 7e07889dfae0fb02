//! The CSV splitter against the csv crate (differential tests): every engine (vector, portable
//! and csv_core), whatever the read size, must give the csv crate's records, fields, line
//! numbers (counted to the record's first byte) and byte offsets, on well-formed
//! torch_npu-shaped CSV (quoted shapes with doubled quotes, CRLF, quoted line breaks, multibyte
//! UTF-8 across 64-byte blocks) and on arbitrary bytes from a CSV-heavy alphabet.

use proptest::prelude::*;

use npuprof_scan::csv_rows::{CsvEngine, CsvError, CsvRows};

/// A record as compared: fields, line, byte offset.
type Rec = (Vec<Vec<u8>>, u64, u64);

fn csv_crate(text: &[u8]) -> Vec<Rec> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text);
    let mut record = csv::ByteRecord::new();
    let mut out = Vec::new();
    while rdr.read_byte_record(&mut record).unwrap_or(false) {
        let pos = record.position().map_or((0, 0), |p| (p.line(), p.byte()));
        // The csv crate counts lines up to where the reading starts; ours is the line of the
        // record's first byte, past the line ends (a CRLF's `\n`, blank lines) it starts on.
        let ends = text
            .iter()
            .skip(usize::try_from(pos.1).unwrap_or(usize::MAX));
        let skipped = ends.take_while(|&&b| b == b'\r' || b == b'\n');
        let line = pos.0 + skipped.filter(|&&b| b == b'\n').count() as u64;
        out.push((record.iter().map(<[u8]>::to_vec).collect(), line, pos.1));
    }
    out
}

fn ours(text: &[u8], engine: CsvEngine, chunk: usize) -> Result<Vec<Rec>, String> {
    let mut rows = CsvRows::with_chunk(text, engine, 1 << 20, chunk);
    let mut out = Vec::new();
    loop {
        match rows.next_record() {
            Ok(Some(r)) => out.push((r.iter().map(<[u8]>::to_vec).collect(), r.line(), r.byte())),
            Ok(None) => return Ok(out),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The records read with only the first `split` fields split: those fields, the field count,
/// the line and the byte offset.
fn ours_split(
    text: &[u8],
    engine: CsvEngine,
    split: usize,
) -> Vec<(Vec<Vec<u8>>, usize, u64, u64)> {
    let mut rows = CsvRows::with_chunk(text, engine, 1 << 20, 61);
    let mut out = Vec::new();
    while let Ok(Some(r)) = rows.next_record_split(split) {
        let fields = (0..split.min(r.len())).map(|i| r.get(i).unwrap_or_default().to_vec());
        out.push((fields.collect(), r.len(), r.line(), r.byte()));
    }
    out
}

/// The records read with only the fields at `columns` split: those fields, the field count,
/// the line and the byte offset.
fn ours_columns(
    text: &[u8],
    engine: CsvEngine,
    columns: &[usize],
    chunk: usize,
) -> Vec<(Vec<Vec<u8>>, usize, u64, u64)> {
    let mut rows = CsvRows::with_chunk(text, engine, 1 << 20, chunk);
    let mut out = Vec::new();
    while let Ok(Some(r)) = rows.next_record_columns(columns) {
        let fields = (0..columns.len()).map_while(|j| r.get(j).map(<[u8]>::to_vec));
        out.push((fields.collect(), r.len(), r.line(), r.byte()));
    }
    out
}

/// The csv crate's fields at `columns`, up to the first one a record lacks.
fn csv_crate_columns(want: &[Rec], columns: &[usize]) -> Vec<(Vec<Vec<u8>>, usize, u64, u64)> {
    want.iter()
        .map(|(f, line, byte)| {
            let picked = columns.iter().map_while(|&c| f.get(c).cloned()).collect();
            (picked, f.len(), *line, *byte)
        })
        .collect()
}

/// Column sets to pick: adjacent, far apart, past most records, unordered, none.
const COLUMN_SETS: [&[usize]; 6] = [
    &[1, 2],
    &[0, 3, 9],
    &[2, 70, 71],
    &[4, 30, 31, 64, 79],
    &[3, 1],
    &[],
];

/// Every engine in reads of each size gives the csv crate's records, also when it splits only
/// the first fields or only some columns.
fn check_engines(text: &[u8], chunks: &[usize]) {
    let want = csv_crate(text);
    for columns in COLUMN_SETS {
        let picked = csv_crate_columns(&want, columns);
        // Reads of 256 KiB: the columns are read off the index (see `CsvRows`); in short
        // reads, also from the bitmasks, once the buffer outgrows the index.
        for (engine, chunk) in [CsvEngine::Simd, CsvEngine::Portable]
            .into_iter()
            .flat_map(|engine| [(engine, chunks[0]), (engine, 256 << 10)])
        {
            assert_eq!(
                ours_columns(text, engine, columns, chunk),
                picked,
                "{engine:?} picking {columns:?} in reads of {chunk}"
            );
        }
    }
    for split in [1, 2, 5] {
        let prefix: Vec<_> = want
            .iter()
            .map(|(f, line, byte)| (f[..split.min(f.len())].to_vec(), f.len(), *line, *byte))
            .collect();
        for engine in [CsvEngine::Simd, CsvEngine::Portable] {
            assert_eq!(
                ours_split(text, engine, split),
                prefix,
                "{engine:?} splitting {split}"
            );
        }
    }
    for engine in [CsvEngine::Simd, CsvEngine::Portable, CsvEngine::Scalar] {
        for &chunk in chunks.iter().chain([256 << 10].iter()) {
            let got = ours(text, engine, chunk);
            assert_eq!(
                got.as_ref(),
                Ok(&want),
                "{engine:?} in reads of {chunk} on {:?}",
                String::from_utf8_lossy(&text[..text.len().min(400)])
            );
        }
    }
}

/// A field as torch_npu writes it, or a stress case.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[0-9]{1,6}(\\.[0-9]{1,3})?",
        2 => "[A-Za-z_]{0,12}",
        1 => Just(String::new()),
        1 => Just("N/A".to_owned()),
        1 => "[0-9]{16}\\.[0-9]{3}\t",
        // Shapes: `"""32,3,224,224"""`.
        2 => "[0-9,;]{0,20}".prop_map(|s| format!("\"\"\"{s}\"\"\"")),
        // Quoted text with commas, line breaks, doubled quotes and multibyte UTF-8.
        2 => "[a ,é€😀\r\n]{0,30}|\"\"".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
        1 => "[a-zé]{60,140}",
    ]
}

fn line_end() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => Just("\n"), 3 => Just("\r\n"), 1 => Just("\r"), 1 => Just("\n\n"), 1 => Just("\r\n\r\n")]
}

fn document() -> impl Strategy<Value = String> {
    document_of(1..12, 0..120)
}

/// Up to `rows` records of `fields` fields each.
fn document_of(
    fields: std::ops::Range<usize>,
    rows: std::ops::Range<usize>,
) -> impl Strategy<Value = String> {
    (
        prop::collection::vec((prop::collection::vec(field(), fields), line_end()), rows),
        any::<bool>(),
    )
        .prop_map(|(rows, last_end)| {
            let mut doc = String::new();
            let n = rows.len();
            for (i, (fields, end)) in rows.into_iter().enumerate() {
                doc.push_str(&fields.join(","));
                if i + 1 < n || last_end {
                    doc.push_str(end);
                }
            }
            doc
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn well_formed_csv_matches_the_csv_crate(doc in document(), chunk in 1usize..300) {
        check_engines(doc.as_bytes(), &[chunk, 64]);
    }

    /// Records as wide as kernel_details.csv's (46 columns) and wider: the column picks pass
    /// whole blocks of separators and several in one block.
    #[test]
    fn wide_records_match_the_csv_crate(doc in document_of(20..90, 0..12), chunk in 1usize..300) {
        check_engines(doc.as_bytes(), &[chunk, 64]);
    }

    #[test]
    fn any_bytes_match_the_csv_crate(
        bytes in prop::collection::vec(
            prop::sample::select(&b"\"\"\",,,\r\n\na b\xC3\xA9\x00"[..]),
            0..600,
        ),
        chunk in 1usize..200,
    ) {
        check_engines(&bytes, &[chunk]);
    }

    #[test]
    fn mutated_csv_matches_the_csv_crate(
        doc in document(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), prop::sample::select(&b"\",\r\nx "[..])),
            1..4,
        ),
    ) {
        let mut bytes = doc.into_bytes();
        if !bytes.is_empty() {
            for (at, b) in edits {
                let i = at.index(bytes.len());
                bytes[i] = b;
            }
        }
        check_engines(&bytes, &[97]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4))]

    /// Megabytes: many 64-byte blocks and many reads, with a misplaced quote now and then.
    #[test]
    fn large_documents_match_the_csv_crate(doc in document(), copies in 60usize..200, stray in any::<bool>()) {
        let mut big = String::new();
        for i in 0..copies {
            big.push_str(&doc);
            big.push('\n');
            if stray && i % 97 == 3 {
                big.push_str("x\"y,\"z\n");
            }
        }
        let want = csv_crate(big.as_bytes());
        for engine in [CsvEngine::Simd, CsvEngine::Portable] {
            prop_assert_eq!(ours(big.as_bytes(), engine, 64 << 10), Ok(want.clone()));
        }
    }
}

#[test]
fn a_record_past_the_limit_is_an_error_at_its_start() {
    let mut text = b"a,b\n1,2\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', 5000));
    text.extend_from_slice(b"\n3,4\n");
    for engine in [CsvEngine::Simd, CsvEngine::Portable, CsvEngine::Scalar] {
        for chunk in [1, 100, 1 << 20] {
            let mut rows = CsvRows::with_chunk(text.as_slice(), engine, 4096, chunk);
            let mut n = 0;
            let err = loop {
                match rows.next_record() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            };
            assert_eq!(n, 2, "{engine:?} {chunk}");
            assert!(
                matches!(
                    err,
                    Some(CsvError::TooLarge {
                        byte: 8,
                        limit: 4096
                    })
                ),
                "{engine:?} {chunk}: {err:?}"
            );
        }
    }
}

#[test]
fn line_numbers_are_the_editors_also_after_crlf_and_blank_lines() {
    let text = b"a,b\r\nc,d\r\n\r\n\"e\r\nf\",g\r\nh,i\n\nj,k\n";
    let lines = |engine| {
        let mut rows = CsvRows::with_chunk(&text[..], engine, 1 << 20, 5);
        let mut out = Vec::new();
        while let Ok(Some(r)) = rows.next_record() {
            out.push(r.line());
        }
        out
    };
    for engine in [CsvEngine::Simd, CsvEngine::Portable, CsvEngine::Scalar] {
        assert_eq!(lines(engine), [1, 2, 4, 6, 8], "{engine:?}");
    }
    check_engines(text, &[1, 5, 64]);
}
