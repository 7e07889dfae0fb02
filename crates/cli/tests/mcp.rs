//! `npuprof mcp` end to end, driven by the official Rust SDK's client (rmcp) over the binary's
//! stdin/stdout: the tool list and its schemas, calls on a vendored real run and on copies of
//! the example repository, errors, concurrent calls and a cancelled collect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use insta_cmd::get_cargo_bin;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam,
    ReadResourceRequestParams, Request,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestHandle, RoleClient, RunningService,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt as _};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

mod support;
use support::{all_files, copy_example, source_files, workspace_root};

/// The vendored real run (two ranks, text export, level 1).
const RUN: &str = "crates/verify/tests/data/runs/msinsight-text-level1";

/// A client that passes the progress messages it is sent to the test.
struct Client {
    progress: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params.message.unwrap_or_default());
    }
}

struct Server {
    client: RunningService<RoleClient, Client>,
    progress: mpsc::UnboundedReceiver<String>,
    /// A private TMPDIR and XDG_STATE_HOME for the commands the server runs.
    _tmp: tempfile::TempDir,
}

/// `npuprof mcp` in `dir`, the fake torch_npu importable and TMPDIR and XDG_STATE_HOME in
/// `tmp`, as in collect's tests.
fn server_command(dir: &Path, tmp: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(get_cargo_bin("npuprof"));
    command
        .arg("mcp")
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TMPDIR", tmp)
        .env("XDG_STATE_HOME", tmp.join("state"))
        .env("PYTHONPATH", workspace_root().join("tests/fake_torch_npu"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// Starts `npuprof mcp` in `dir` and initialises the protocol.
async fn start(dir: &Path) -> Server {
    let tmp = tempfile::tempdir().unwrap();
    let command = server_command(dir, tmp.path());
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, progress) = mpsc::unbounded_channel();
    let client = Client { progress: tx }.serve(transport).await.unwrap();
    Server {
        client,
        progress,
        _tmp: tmp,
    }
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// Sends a collect of `repo`'s decode_mtp run config with `launch`, without waiting for it.
async fn send_collect(
    client: &RunningService<RoleClient, Client>,
    repo: &Path,
    launch: &[&str],
) -> RequestHandle<RoleClient> {
    let args = arguments(json!({
        "repo": repo, "model": "deepseek-mini", "yaml": "decode_mtp.yaml",
        "phase": "decode", "decode_active": 10, "launch": launch,
    }));
    client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new("collect").with_arguments(args),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap()
}

impl Server {
    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        self.client
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments(args)))
            .await
            .unwrap_or_else(|err| panic!("{tool}: {err}"))
    }
}

/// The result's structured document, when the call succeeded.
fn document(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(false), "{:#?}", result.content);
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// The result's structured document, when the call is a tool error.
fn error_document(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(true), "{:#?}", result.content);
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

fn text(result: &CallToolResult, block: usize) -> String {
    result.content[block]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// What `npuprof <args> --json` prints on the command line, run from the workspace root.
fn cli_json(args: &[&str]) -> Value {
    let output = std::process::Command::new(get_cargo_bin("npuprof"))
        .args(args)
        .arg("--json")
        .current_dir(workspace_root())
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_every_tool_with_its_schema_annotations_and_the_docs() {
    let server = start(&workspace_root()).await;
    let tools = server.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in [
        "route", "plan", "patch", "revert", "status", "verify", "summary", "compare", "advise",
        "lint", "inject", "relocate", "collect", "skill",
    ] {
        assert!(names.contains(&name), "no tool `{name}` in {names:?}");
    }
    assert!(!names.contains(&"mcp") && !names.contains(&"man"));
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();

    let patch = tool("patch");
    let properties = &patch.input_schema["properties"];
    assert_eq!(patch.input_schema["type"], "object");
    assert_eq!(properties["dry_run"]["type"], "boolean");
    assert_eq!(properties["decode_active"]["type"], "integer");
    assert_eq!(properties["model"]["type"], "string");
    assert_eq!(properties["yaml"]["type"], "string");
    assert_eq!(
        properties["phase"]["enum"],
        json!(["both", "mm_encode", "prefill", "decode"])
    );
    assert!(properties.get("json").is_none());
    assert_eq!(
        tool("collect").input_schema["properties"]["launch"]["type"],
        "array"
    );
    assert_eq!(tool("compare").input_schema["required"], json!(["base"]));

    for name in [
        "route", "plan", "status", "verify", "summary", "compare", "advise", "lint",
    ] {
        let annotations = tool(name).annotations.as_ref().unwrap();
        assert_eq!(annotations.read_only_hint, Some(true), "{name}");
    }
    for name in ["patch", "revert", "relocate", "inject", "collect", "skill"] {
        let tool = tool(name);
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(annotations.read_only_hint, Some(false), "{name}");
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(
            description.contains("Changes files: ") && description.contains("journal"),
            "{name}: {description}"
        );
    }

    let resources = server.client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "npuprof://docs/findings.md",
            "npuprof://docs/lint-rules.md",
            "npuprof://docs/json.md"
        ]
    );
    let page = server
        .client
        .read_resource(ReadResourceRequestParams::new("npuprof://docs/json.md"))
        .await
        .unwrap();
    let served = serde_json::to_value(&page.contents[0]).unwrap();
    let on_disk = std::fs::read_to_string(workspace_root().join("docs/json.md")).unwrap();
    assert_eq!(served["text"], on_disk);
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_summary_and_advise_return_the_commands_documents() {
    let server = start(&workspace_root()).await;
    for (tool, exit_one) in [("verify", false), ("summary", false), ("advise", true)] {
        let result = server.call(tool, json!({ "path": RUN })).await;
        let served = document(&result);
        assert_eq!(
            served,
            &cli_json(&[tool, RUN]),
            "{tool}: not the command's document"
        );
        assert!(served["schema_version"].is_u64());
        let summary = text(&result, 0);
        assert!(
            summary.starts_with(&format!("npuprof {tool}: ")),
            "{summary}"
        );
        assert_eq!(summary.contains("exit 1"), exit_one, "{summary}");
        // The document again as text, as the command printed it.
        assert!(text(&result, 1).starts_with("{\n  \"schema_version\""));
    }
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_patch_writes_nothing_and_patch_then_revert_restores_every_byte() {
    let repo = copy_example("recipes-mini");
    let before = all_files(repo.path());
    let server = start(repo.path()).await;
    let target = json!({
        "repo": repo.path(), "model": "deepseek-mini", "yaml": "decode_mtp.yaml",
        "phase": "decode", "decode_active": 12,
    });
    let mut dry_run = target.clone();
    dry_run["dry_run"] = json!(true);
    let result = server.call("patch", dry_run).await;
    let report = document(&result);
    assert_eq!(report["changed"], true, "{report:#}");
    assert!(text(&result, 0).contains("exit 1"), "{}", text(&result, 0));
    assert!(report["files"][0]["diff"].as_str().unwrap().contains("@@"));
    assert_eq!(all_files(repo.path()), before, "a dry run wrote");

    let result = server.call("patch", target).await;
    assert_eq!(document(&result)["changed"], true);
    assert_ne!(all_files(repo.path()), before, "the patch changed nothing");
    let status = server.call("status", json!({ "repo": repo.path() })).await;
    assert_eq!(document(&status)["patched"], true);

    let result = server.call("revert", json!({ "repo": repo.path() })).await;
    document(&result);
    assert_eq!(all_files(repo.path()), before, "revert left a byte changed");
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_tool_errors_with_the_error_document_and_the_server_goes_on() {
    let server = start(&workspace_root()).await;
    let missing = server
        .call("verify", json!({ "path": "no/such/run/dir" }))
        .await;
    let error = &error_document(&missing)["error"];
    assert_eq!(error["code"], "not_found", "{error:#}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no/such/run/dir")
    );
    assert!(error["hint"].is_string());
    assert!(text(&missing, 0).contains("error [not_found]"));

    let wrong_type = server
        .call("plan", json!({ "decode_active": "many" }))
        .await;
    assert_eq!(error_document(&wrong_type)["error"]["code"], "usage");
    let unknown = server.call("status", json!({ "bogus": true })).await;
    assert_eq!(error_document(&unknown)["error"]["code"], "usage");
    let out_of_range = server.call("plan", json!({ "decode_active": 0 })).await;
    assert_eq!(error_document(&out_of_range)["error"]["code"], "usage");
    let no_tool = server
        .client
        .call_tool(CallToolRequestParams::new("mcp"))
        .await;
    assert!(no_tool.is_err(), "an unknown tool is a protocol error");

    let after = server.call("verify", json!({ "path": RUN })).await;
    assert_eq!(document(&after)["ok"], true);
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_at_once_are_both_served() {
    let server = start(&workspace_root()).await;
    let (summary, advise) = tokio::join!(
        server.call("summary", json!({ "path": RUN })),
        server.call("advise", json!({ "path": RUN })),
    );
    assert_eq!(document(&summary), &cli_json(&["summary", RUN]));
    assert_eq!(document(&advise), &cli_json(&["advise", RUN]));
    server.client.cancel().await.unwrap();
}

/// A collect whose launch sleeps is cancelled once it runs: the server interrupts it as Ctrl-C
/// does and the repository is restored byte for byte; while it ran, another call was served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_collect_restores_the_repository() {
    let repo = copy_example("recipes-mini");
    let before = source_files(repo.path());
    let mut server = start(repo.path()).await;
    let started = Instant::now();
    let handle = send_collect(&server.client, repo.path(), &["sleep", "60"]).await;
    // Progress: the command line first, then collect's own lines until the launch runs.
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|m: &String| m.contains("running `sleep 60`"))
    {
        let message = tokio::time::timeout(Duration::from_secs(60), server.progress.recv())
            .await
            .unwrap_or_else(|_| panic!("no progress saying the launch runs: {seen:#?}"))
            .unwrap();
        seen.push(message);
    }
    assert!(seen[0].starts_with("running npuprof collect"), "{seen:#?}");
    assert!(repo.path().join(".npuprof/journal.json").exists());

    // Served while collect runs.
    let status = server.call("status", json!({ "repo": repo.path() })).await;
    assert_eq!(document(&status)["patched"], true);

    handle
        .cancel(Some("the test cancels".into()))
        .await
        .unwrap();
    let cancelled = Instant::now();
    while (repo.path().join(".npuprof").exists() || source_files(repo.path()) != before)
        && cancelled.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check_restored(repo.path(), &before);
    assert!(
        started.elapsed() < Duration::from_secs(55),
        "the launch ran to its end: the cancel was not honoured"
    );
    let status = server.call("status", json!({ "repo": repo.path() })).await;
    assert_eq!(document(&status)["patched"], false);
    server.client.cancel().await.unwrap();
}

/// Checks the repository's sources are byte-identical to `before` and no journal is left.
fn check_restored(repo: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) {
    assert_eq!(&source_files(repo), before, "not restored byte for byte");
    assert!(!repo.join(".npuprof").exists(), "journal left behind");
}

/// Whether process `pid` runs (exists and is not a zombie).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// How the test stops the server while a collect runs.
enum Stop {
    /// The client closes the connection (the server's stdin ends).
    Close,
    /// The host sends SIGTERM.
    Terminate,
}

/// A collect whose launch sleeps is running when the server is stopped: the server interrupts
/// it as Ctrl-C does, waits for the repository's restore, and exits; the launch is gone.
async fn stopping_the_server_restores_the_repository(stop: Stop) {
    let repo = copy_example("recipes-mini");
    let before = source_files(repo.path());
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server_command(repo.path(), tmp.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let io = (server.stdout.take().unwrap(), server.stdin.take().unwrap());
    let (tx, mut progress) = mpsc::unbounded_channel();
    let client = Client { progress: tx }.serve(io).await.unwrap();
    let pid_file = tmp.path().join("launch.pid");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let handle = send_collect(&client, repo.path(), &["bash", "-c", &script]).await;
    let started = Instant::now();
    while !pid_file.exists() && started.elapsed() < Duration::from_secs(60) {
        let _ = tokio::time::timeout(Duration::from_millis(50), progress.recv()).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let launch = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    assert!(alive(&launch), "the launch does not run");
    assert!(repo.path().join(".npuprof/journal.json").exists());

    match stop {
        Stop::Close => {
            drop(handle);
            client.cancel().await.unwrap();
        }
        Stop::Terminate => {
            let pid = server.id().unwrap().to_string();
            let killed = std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap();
            assert!(killed.success());
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(40), server.wait())
        .await
        .expect("the server did not exit")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!alive(&launch), "the launch outlived the server");
    check_restored(repo.path(), &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_connection_during_a_collect_restores_the_repository() {
    stopping_the_server_restores_the_repository(Stop::Close).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_collect_restores_the_repository() {
    stopping_the_server_restores_the_repository(Stop::Terminate).await;
}
