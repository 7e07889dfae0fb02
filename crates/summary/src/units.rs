//! Durations and shares as people read them, for the terminal and HTML renderings.

/// A duration in µs as `1.23 s`, `136.58 ms` or `53.7 µs`; what rounds to zero is `0.0 µs`,
/// never `-0.0 µs`.
pub fn duration(us: f64) -> String {
    let abs = us.abs();
    if abs < 0.05 {
        return "0.0 µs".to_owned();
    }
    if abs >= 1_000_000.0 {
        format!("{:.2} s", us / 1_000_000.0)
    } else if abs >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// A signed duration: `+1.10 ms`, `-250.0 µs`; what rounds to zero is `+0.0 µs`.
pub fn signed(us: f64) -> String {
    let sign = if us <= -0.05 { "-" } else { "+" };
    format!("{sign}{}", duration(us.abs()))
}

/// A share (0–1) as `12.3%`; what rounds to zero is `0.0%`, never `-0.0%`.
pub fn percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct.abs() < 0.05 {
        return "0.0%".to_owned();
    }
    format!("{pct:.1}%")
}

/// A signed share (0–1) as `+12.3%` or `-0.4%`; what rounds to zero is `0.0%`, never
/// `-0.0%`.
pub fn signed_percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct.abs() < 0.05 {
        return "0.0%".to_owned();
    }
    format!("{pct:+.1}%")
}

/// A size in bytes as `1.23 GiB`, `456.7 MiB`, `12.0 KiB` or `512 B` (binary units, as
/// torch_npu's memory files count them).
pub fn bytes(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KIB * KIB * KIB {
        format!("{:.2} GiB", b / (KIB * KIB * KIB))
    } else if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else if b >= KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// `text` cut to `width` characters (at least 2), the middle replaced by `…`: kernel names
/// differ at both ends.
pub fn fit(text: &str, width: usize) -> String {
    let width = width.max(2);
    let count = text.chars().count();
    if count <= width {
        return text.to_owned();
    }
    let head = (width - 1) / 2;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - (width - 1 - head)).collect();
    format!("{start}…{end}")
}

/// `text` broken into lines of at most `width` characters at spaces (a word longer than
/// `width` gets a line of its own, whole), never cut inside a word.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_only() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("a verylongword b", 4), ["a", "verylongword", "b"]);
        assert_eq!(wrap("", 10), [""]);
        let text = "rank sets differ: base rank 0, new rank 1 (per-step times are averaged)";
        for width in 8..40 {
            let lines = wrap(text, width);
            assert_eq!(lines.join(" "), text, "width {width}");
            let fits = |l: &String| l.chars().count() <= width || !l.contains(' ');
            assert!(lines.iter().all(fits), "{lines:?}");
        }
    }

    #[test]
    fn units_follow_magnitude() {
        assert_eq!(duration(53.741), "53.7 µs");
        assert_eq!(bytes(981_462_016), "936.0 MiB");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(duration(136_581.009), "136.58 ms");
        assert_eq!(duration(2_500_000.0), "2.50 s");
        assert_eq!(percent(0.12345), "12.3%");
        assert_eq!(
            fit("aclnnReduceSum_ReduceSumOpAiCore_ReduceSum", 11),
            "aclnn…ceSum"
        );
        assert_eq!(fit("short", 11), "short");
    }
}
