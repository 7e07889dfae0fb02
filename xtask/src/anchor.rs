//! msprof-analyze, the reference tool the advise and breakdown benchmarks time npuprof against
//! (`pip install msprof-analyze`): the options that choose its executable, and finding it.

use std::path::PathBuf;

/// msprof-analyze's executable name, looked for on PATH.
const ANCHOR_NAME: &str = "msprof-analyze";

/// The options of a benchmark with msprof-analyze rows.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// msprof-analyze's executable [default: `msprof-analyze` on PATH; without one its rows are
    /// skipped, saying why].
    #[arg(long, value_name = "PATH", conflicts_with = "no_anchor")]
    pub anchor: Option<PathBuf>,
    /// Do not time msprof-analyze, even when it is installed.
    #[arg(long)]
    pub no_anchor: bool,
}

impl Options {
    /// msprof-analyze's executable: `--anchor`, else the first on PATH; why not, when there is
    /// none or `--no-anchor` was given.
    pub fn find(&self) -> Result<PathBuf, String> {
        if self.no_anchor {
            return Err("--no-anchor".to_owned());
        }
        if let Some(program) = &self.anchor {
            return Ok(program.clone());
        }
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(ANCHOR_NAME))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                format!("no {ANCHOR_NAME} on PATH: `pip install msprof-analyze`, or --anchor PATH")
            })
    }
}
