//! Headless Chromium for the HTML tests: render a page, keep a screenshot, return the DOM.
//!
//! Without Chromium the tests cannot check the page. With `CI` set that is a failure (CI
//! installs the Debian `chromium` package); elsewhere the test prints a loud notice and skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NAMES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// The Chromium binary on `PATH`, if any.
fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| NAMES.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Chromium, or `None` after a loud skip notice; panics when `CI` is set and it is missing.
pub fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(found) = find() {
        return Some(found);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test}: headless Chromium is required in CI to test the HTML page \
             (apt-get install -y chromium), and none of {NAMES:?} is on PATH"
        );
    }
    // Written to the stderr handle itself: the test harness captures `eprintln!` of passing
    // tests, and this notice must be seen.
    let notice = format!(
        "\n!!!!!!!! SKIPPED {test}: no Chromium on PATH ({NAMES:?}); the HTML page was NOT \
         checked in a browser. Install it (apt-get install -y chromium) to run this test. !!!!!!!!\n"
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), notice.as_bytes());
    None
}

/// Runs Chromium headless on `page` with a window of `width`×`height`, with a timeout.
fn run(chromium: &Path, page: &Path, size: (u32, u32), extra: &[String]) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .args(extra)
        .arg(format!(
            "file://{}",
            page.canonicalize().expect("page path").display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    while child.try_wait().expect("wait chromium").is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reader").expect("chromium output")
}

/// The DOM Chromium renders for `page` (`--dump-dom`), after saving a screenshot at phone size
/// (390 px wide) to `screenshot`.
pub fn render(chromium: &Path, page: &Path, screenshot: &Path) -> String {
    std::fs::create_dir_all(screenshot.parent().expect("screenshot dir")).expect("artifact dir");
    let _ = std::fs::remove_file(screenshot);
    run(
        chromium,
        page,
        (390, 2400),
        &[format!("--screenshot={}", screenshot.display())],
    );
    assert!(
        std::fs::metadata(screenshot).is_ok_and(|m| m.len() > 10_000),
        "chromium wrote no screenshot to {}",
        screenshot.display()
    );
    run(chromium, page, (1200, 2400), &["--dump-dom".to_owned()])
}

/// One chart row of the rendered DOM.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `data-label`.
    pub label: String,
    /// `data-value`.
    pub value: f64,
    /// `(data-segment, data-value, width)` of each `<rect>`.
    pub rects: Vec<(String, f64, f64)>,
}

/// The charts of a rendered DOM: `(data-chart, rows)`, in document order.
pub fn charts(dom: &str) -> Vec<(String, Vec<Row>)> {
    let mut out = Vec::new();
    for figure in dom.split("<figure ").skip(1) {
        let figure = figure.split("</figure>").next().unwrap_or_default();
        let id = attr(figure, "data-chart").unwrap_or_default();
        let rows = figure
            .split("<div class=\"row")
            .skip(1)
            .map(|row| Row {
                label: unescape(&attr(row, "data-label").unwrap_or_default()),
                value: number(&attr(row, "data-value").unwrap_or_default()),
                rects: row
                    .split("<rect ")
                    .skip(1)
                    .map(|r| {
                        (
                            attr(r, "data-segment").unwrap_or_default(),
                            number(&attr(r, "data-value").unwrap_or_default()),
                            number(&attr(r, "width").unwrap_or_default()),
                        )
                    })
                    .collect(),
            })
            .collect();
        out.push((id, rows));
    }
    out
}

fn attr(element: &str, name: &str) -> Option<String> {
    let tag_end = element.find('>').unwrap_or(element.len());
    let tag = &element[..tag_end];
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(tag[start..start + len].to_owned())
}

fn number(text: &str) -> f64 {
    text.parse().unwrap_or(f64::NAN)
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
