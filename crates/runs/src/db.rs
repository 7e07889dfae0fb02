//! db exports (`ascend_pytorch_profiler[_{rank}].db`, `analysis.db`): checked for real with
//! SQLite, read-only and immutable (verify never writes): the header, the size the header
//! promises, that the database opens and answers, and that the tables a good run fills exist
//! and hold rows.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// The 16-byte magic that starts every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Which database of a db export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    /// `ascend_pytorch_profiler[_{rank}].db`: the profile itself.
    Profiler,
    /// `analysis.db`: step and communication analysis.
    Analysis,
}

impl DbKind {
    /// The kind of a file name in `ASCEND_PROFILER_OUTPUT/`, if it is a db of the export.
    pub fn of(name: &str) -> Option<Self> {
        if name.starts_with("ascend_pytorch_profiler") && name.ends_with(".db") {
            Some(DbKind::Profiler)
        } else if name == "analysis.db" {
            Some(DbKind::Analysis)
        } else {
            None
        }
    }

    /// Tables that must exist, and whether each must hold rows.
    pub fn expected_tables(self) -> &'static [(&'static str, bool)] {
        match self {
            DbKind::Profiler => &[
                ("TASK", true),
                ("STRING_IDS", true),
                ("COMPUTE_TASK_INFO", true),
            ],
            DbKind::Analysis => &[("StepTraceTime", false)],
        }
    }
}

/// What is wrong with a database file (the first problem found; later stages are not run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbProblem {
    /// The file does not start with the SQLite magic.
    NotSqlite,
    /// The file is shorter than the page count in its header says.
    Truncated {
        /// Bytes the header promises.
        expected: u64,
        /// Bytes present.
        actual: u64,
    },
    /// SQLite cannot open or read it.
    Unopenable(String),
    /// Expected tables absent.
    TablesMissing(Vec<&'static str>),
    /// Expected tables present but empty.
    TablesEmpty(Vec<&'static str>),
}

/// The size in bytes a database header promises (`page_size × page_count`), when the header's
/// page count is valid (SQLite 3.7.0+ writes it; it is valid when the change counter at offset
/// 24 equals the version-valid-for number at offset 92).
pub fn promised_size(head: &[u8]) -> Option<u64> {
    let be32 = |at: usize| -> Option<u32> {
        head.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
    };
    let raw_page = u16::from_be_bytes(head.get(16..18)?.try_into().ok()?);
    let page_size: u64 = if raw_page == 1 {
        65536
    } else {
        u64::from(raw_page)
    };
    let pages = be32(28)?;
    (be32(24)? == be32(92)? && pages > 0 && page_size >= 512).then(|| page_size * u64::from(pages))
}

/// Checks one database: `head` is its leading bytes (at least 100 for the size check) and `len`
/// its length. Returns the first problem, or `None` for a good database.
pub fn check(path: &Path, head: &[u8], len: u64, kind: DbKind) -> Option<DbProblem> {
    if !head.starts_with(SQLITE_MAGIC) {
        return Some(DbProblem::NotSqlite);
    }
    if let Some(expected) = promised_size(head)
        && len < expected
    {
        return Some(DbProblem::Truncated {
            expected,
            actual: len,
        });
    }
    let conn = match open_read_only(path) {
        Ok(c) => c,
        Err(e) => return Some(DbProblem::Unopenable(e.to_string())),
    };
    tables_problem(&conn, kind)
}

/// The step ids of a profiler database's `STEP_TIME` table, in order (`None` without the table
/// or when it cannot be read).
pub fn step_ids(path: &Path) -> Option<Vec<u64>> {
    let conn = open_read_only(path).ok()?;
    let mut statement = conn.prepare("SELECT id FROM STEP_TIME ORDER BY id").ok()?;
    let ids = statement
        .query_map([], |row| row.get::<_, i64>(0))
        .ok()?
        .filter_map(|id| id.ok().and_then(|id| u64::try_from(id).ok()))
        .collect();
    Some(ids)
}

/// Opens a database read-only and immutable (nothing is ever written, not even a journal).
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let uri = format!("file:{}?mode=ro&immutable=1", uri_escape(path));
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// Escapes a path for a `file:` URI (`%`, `?`, `#` and non-ASCII bytes).
fn uri_escape(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b'?' | b'#') || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn tables_problem(conn: &Connection, kind: DbKind) -> Option<DbProblem> {
    let mut missing = Vec::new();
    let mut empty = Vec::new();
    for &(table, needs_rows) in kind.expected_tables() {
        let exists: rusqlite::Result<bool> = conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |r| r.get(0),
        );
        match exists {
            Err(e) => return Some(DbProblem::Unopenable(e.to_string())),
            Ok(false) => missing.push(table),
            Ok(true) if needs_rows => {
                let sql = format!("SELECT EXISTS(SELECT 1 FROM \"{table}\")");
                match conn.query_row(&sql, [], |r| r.get::<_, bool>(0)) {
                    Err(e) => return Some(DbProblem::Unopenable(e.to_string())),
                    Ok(false) => empty.push(table),
                    Ok(true) => {}
                }
            }
            Ok(true) => {}
        }
    }
    if !missing.is_empty() {
        Some(DbProblem::TablesMissing(missing))
    } else if !empty.is_empty() {
        Some(DbProblem::TablesEmpty(empty))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        assert_eq!(
            DbKind::of("ascend_pytorch_profiler_3.db"),
            Some(DbKind::Profiler)
        );
        assert_eq!(DbKind::of("analysis.db"), Some(DbKind::Analysis));
        assert_eq!(DbKind::of("kernel_details.csv"), None);
    }

    #[test]
    fn uri_escapes_what_sqlite_would_misread() {
        assert_eq!(uri_escape(Path::new("/a b/c?d#e%f")), "/a b/c%3Fd%23e%25f");
    }
}
