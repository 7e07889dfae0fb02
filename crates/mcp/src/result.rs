//! A finished command as a tool result: its `--json` document as the structured content (a
//! tool error when it exited 2), a short text summary first for hosts that show text, and the
//! document again as text, as the protocol asks of structured results.

use npuprof_severity::ErrorCode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::process::Finished;
use crate::tool::Tool;

/// The error document the command line prints under `--json` (`docs/json.md`), for a failure
/// the server finds itself (an argument the schema does not allow, a command that could not
/// start or printed no document).
pub fn error_document(
    schema_version: u32,
    code: ErrorCode,
    message: &str,
    hint: Option<&str>,
) -> Value {
    json!({
        "schema_version": schema_version,
        "ok": false,
        "error": {
            "code": code,
            "message": message,
            "hint": hint.unwrap_or(code.default_hint()),
        }
    })
}

/// A tool error whose structured content is `document`.
pub fn tool_error(summary: String, document: Value) -> CallToolResult {
    with_summary(CallToolResult::structured_error(document), summary, None)
}

/// `result` with `summary` as its first text block, and the document's text as the command
/// printed it (`schema_version` first) when there is one.
fn with_summary(
    mut result: CallToolResult,
    summary: String,
    printed: Option<&[u8]>,
) -> CallToolResult {
    if let (Some(printed), Some(block)) = (printed, result.content.first_mut()) {
        *block = ContentBlock::text(String::from_utf8_lossy(printed).trim_end().to_owned());
    }
    result.content.insert(0, ContentBlock::text(summary));
    result
}

/// The result of `tool`'s finished command: exit 0 and 1 succeed (1 means findings or
/// changes, not an error), exit 2 is a tool error carrying the document the command printed;
/// a command that printed no document, or ended by a signal, is a tool error with one made
/// here.
pub fn of_finished(tool: &Tool, finished: Finished, schema_version: u32) -> CallToolResult {
    let name = &tool.name;
    let stderr = finished.stderr_tail.join("\n");
    let said = |line: String| {
        if stderr.is_empty() {
            line
        } else {
            format!("{line}\n{stderr}")
        }
    };
    if finished.cancelled {
        let message = format!("npuprof {name} was cancelled: it was interrupted as Ctrl-C does");
        let document = serde_json::from_slice(&finished.stdout)
            .unwrap_or_else(|_| error_document(schema_version, ErrorCode::Failed, &message, None));
        return tool_error(said(message), document);
    }
    let code = finished.code;
    if !tool.json {
        let text = String::from_utf8_lossy(&finished.stdout).into_owned();
        if code == Some(0) {
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            if !stderr.is_empty() {
                result.content.insert(0, ContentBlock::text(stderr));
            }
            return result;
        }
        let message = format!("npuprof {name} failed ({})", exit_text(code));
        let document = error_document(
            schema_version,
            failed_code(code),
            &stderr_or(&message, &stderr),
            None,
        );
        return tool_error(said(message), document);
    }
    let document: Option<Value> = serde_json::from_slice(&finished.stdout).ok();
    match (code, document) {
        (Some(0), Some(document)) => with_summary(
            CallToolResult::structured(document),
            said(format!("npuprof {name}: ok")),
            Some(&finished.stdout),
        ),
        (Some(1), Some(document)) => with_summary(
            CallToolResult::structured(document),
            said(format!(
                "npuprof {name}: exit 1 (findings, or changes a dry run would make)"
            )),
            Some(&finished.stdout),
        ),
        (_, Some(document)) => {
            let summary = error_summary(name, code, &document);
            with_summary(
                CallToolResult::structured_error(document),
                said(summary),
                Some(&finished.stdout),
            )
        }
        (_, None) => {
            let message = format!(
                "npuprof {name} ended ({}) without a JSON document on stdout",
                exit_text(code)
            );
            let document = error_document(
                schema_version,
                failed_code(code),
                &stderr_or(&message, &stderr),
                None,
            );
            tool_error(said(message), document)
        }
    }
}

/// One line for a failed command's document: the error document's code, message and hint, or a
/// report's own `error` field.
fn error_summary(name: &str, code: Option<i32>, document: &Value) -> String {
    let error = &document["error"];
    match (
        error["code"].as_str(),
        error["message"].as_str(),
        error.as_str(),
    ) {
        (Some(kind), Some(message), _) => {
            let hint = error["hint"]
                .as_str()
                .map_or_else(String::new, |h| format!(" (hint: {h})"));
            format!("npuprof {name}: error [{kind}]: {message}{hint}")
        }
        (_, _, Some(message)) => format!("npuprof {name} failed ({}): {message}", exit_text(code)),
        _ => format!("npuprof {name} failed ({})", exit_text(code)),
    }
}

/// `message` with what the command said on stderr.
fn stderr_or(message: &str, stderr: &str) -> String {
    if stderr.is_empty() {
        message.to_owned()
    } else {
        format!("{message}: {}", stderr.replace('\n', "; "))
    }
}

/// A command's end in words.
fn exit_text(code: Option<i32>) -> String {
    code.map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"))
}

/// The code of a failure without a document: a usage error is clap's (exit 2 with no `--json`),
/// anything else a failure.
fn failed_code(code: Option<i32>) -> ErrorCode {
    match code {
        Some(2) => ErrorCode::Failed,
        _ => ErrorCode::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Access;

    fn verify() -> Tool {
        Tool {
            name: "verify".into(),
            description: String::new(),
            access: Access::ReadOnly,
            json: true,
            params: Vec::new(),
        }
    }

    fn finished(code: Option<i32>, stdout: &str) -> Finished {
        Finished {
            code,
            stdout: stdout.as_bytes().to_vec(),
            stderr_tail: vec!["npuprof: note".into()],
            cancelled: false,
        }
    }

    fn text(result: &CallToolResult, i: usize) -> String {
        result.content[i]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default()
    }

    #[test]
    fn findings_are_a_result_and_exit_2_a_tool_error_with_the_document() {
        let ok = of_finished(&verify(), finished(Some(1), r#"{"schema_version": 3}"#), 1);
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"schema_version": 3})));
        assert!(text(&ok, 0).starts_with("npuprof verify: exit 1"));
        assert!(text(&ok, 0).ends_with("npuprof: note"));
        assert_eq!(text(&ok, 1), r#"{"schema_version": 3}"#);

        let doc = r#"{"schema_version": 1, "ok": false, "error": {"code": "not_found", "message": "no such run", "hint": "look"}}"#;
        let err = of_finished(&verify(), finished(Some(2), doc), 1);
        assert_eq!(err.is_error, Some(true));
        assert_eq!(
            err.structured_content.as_ref().unwrap()["error"]["code"],
            "not_found"
        );
        assert!(
            text(&err, 0)
                .starts_with("npuprof verify: error [not_found]: no such run (hint: look)")
        );
    }

    #[test]
    fn no_document_is_an_error_document_made_here() {
        let err = of_finished(&verify(), finished(None, "not json"), 4);
        assert_eq!(err.is_error, Some(true));
        let document = err.structured_content.unwrap();
        assert_eq!(document["schema_version"], 4);
        assert_eq!(document["ok"], false);
        assert_eq!(document["error"]["code"], "internal");
        assert!(
            document["error"]["message"]
                .as_str()
                .unwrap()
                .contains("killed by a signal")
        );
    }
}
