//! The load: N OpenAI-style requests of P prompt tokens and O output tokens, C at a time,
//! against the completions or the chat route, each answer's `usage` counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hyper::Method;
use serde::Serialize;

use crate::http::{self, Endpoint};
use crate::settings::ServeSettings;

/// Which OpenAI route the load uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// `completions_path`: the prompt as token ids, so its length is exact.
    Completions,
    /// `chat_path`: one user message of P words.
    Chat,
}

/// What to send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Load {
    /// How many requests.
    pub requests: usize,
    /// Prompt tokens per request.
    pub prompt_len: usize,
    /// Output tokens per request (`max_tokens`, `ignore_eos`).
    pub output_len: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// The route.
    pub api: Api,
    /// The served model's name, when known (vLLM serves the only model when it is left out).
    pub model: Option<String>,
}

/// What the load did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadReport {
    /// Requests sent.
    pub sent: usize,
    /// Answered with 200.
    pub succeeded: usize,
    /// Failed (status, transport or timeout).
    pub failed: usize,
    /// Not sent: the load's deadline had passed (never sent with a deadline already spent).
    pub unsent: usize,
    /// Prompt tokens the server counted (`usage.prompt_tokens`).
    pub prompt_tokens: u64,
    /// Output tokens it generated (`usage.completion_tokens`).
    pub completion_tokens: u64,
    /// Answers with fewer output tokens than asked.
    pub short_outputs: usize,
    /// Wall time, in seconds.
    pub secs: f64,
    /// The first failure, said.
    pub first_error: Option<String>,
}

/// The first prompt token id: ordinary vocabulary in every tokenizer vLLM-Ascend serves,
/// clear of the special tokens at the start.
const FIRST_TOKEN_ID: usize = 1000;

/// Where a load goes, as the engine's settings say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The route of the load's API.
    pub path: String,
    /// The request field that makes each answer run to `max_tokens`.
    pub ignore_eos_field: String,
}

impl Load {
    /// The route of [`Load::api`] in `settings`.
    pub fn route(&self, settings: &ServeSettings) -> Route {
        let path = match self.api {
            Api::Completions => settings.completions_path.clone(),
            Api::Chat => settings.chat_path.clone(),
        };
        Route {
            path,
            ignore_eos_field: settings.ignore_eos_field.clone(),
        }
    }

    fn body(&self, index: usize, route: &Route) -> Vec<u8> {
        let mut body = serde_json::json!({
            "max_tokens": self.output_len,
            "temperature": 0,
        });
        body[route.ignore_eos_field.as_str()] = serde_json::json!(true);
        match self.api {
            Api::Completions => {
                let ids: Vec<usize> = (0..self.prompt_len)
                    .map(|i| FIRST_TOKEN_ID + (index + i) % 100)
                    .collect();
                body["prompt"] = serde_json::json!(ids);
            }
            Api::Chat => {
                let words = vec!["hello"; self.prompt_len].join(" ");
                body["messages"] = serde_json::json!([{"role": "user", "content": words}]);
            }
        }
        if let Some(model) = &self.model {
            body["model"] = serde_json::json!(model);
        }
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

#[derive(Default)]
struct Tally {
    report: LoadReport,
}

/// The bytes of answers the load holds at once, at most (split over the requests in flight).
const LOAD_BODY_BUDGET: usize = 256 << 20;
/// The least of an answer read, whatever the concurrency (a completion's JSON with its usage).
const MIN_BODY_CAP: usize = 64 << 10;

/// Sends the load; every request must be answered before `deadline`; none is sent after it.
pub async fn run(endpoint: Endpoint, route: Route, load: Load, deadline: Instant) -> LoadReport {
    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let concurrency = load.concurrency.clamp(1, load.requests.max(1));
    // Only the usage counts are needed: each answer is read up to a share of a fixed budget,
    // so the memory is bounded whatever the concurrency and the answers' size.
    let body_cap = (LOAD_BODY_BUDGET / concurrency).clamp(MIN_BODY_CAP, http::MAX_BODY);
    let shared = Arc::new((endpoint, load, route));
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (next, shared) = (Arc::clone(&next), Arc::clone(&shared));
            tokio::spawn(async move {
                let (endpoint, load, route) = &*shared;
                let mut tally = Tally::default();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= load.requests {
                        break;
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        // The deadline is a deadline: what is left is not sent at all.
                        tally.report.unsent += 1;
                        continue;
                    }
                    let answer = http::request_capped(
                        endpoint,
                        Method::POST,
                        &route.path,
                        Some(load.body(index, route)),
                        left,
                        body_cap,
                    )
                    .await;
                    tally.count(load, answer);
                }
                tally.report
            })
        })
        .collect();
    let mut report = LoadReport::default();
    for worker in workers {
        if let Ok(part) = worker.await {
            report.add(part);
        }
    }
    report.secs = (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    if report.unsent > 0 {
        report.first_error.get_or_insert(format!(
            "the load's deadline passed with {} request(s) not sent",
            report.unsent
        ));
    }
    report
}

impl Tally {
    fn count(&mut self, load: &Load, answer: Result<http::Response, http::HttpError>) {
        let r = &mut self.report;
        r.sent += 1;
        let failure = match answer {
            Ok(response) if response.status == 200 => {
                match serde_json::from_slice::<serde_json::Value>(&response.body) {
                    Ok(value) => {
                        let usage = |key: &str| value["usage"][key].as_u64();
                        r.succeeded += 1;
                        r.prompt_tokens += usage("prompt_tokens").unwrap_or(0);
                        let out = usage("completion_tokens").unwrap_or(0);
                        r.completion_tokens += out;
                        if out < load.output_len as u64 {
                            r.short_outputs += 1;
                        }
                        None
                    }
                    Err(e) => Some(format!("the answer is not JSON: {e}")),
                }
            }
            Ok(response) => Some(format!(
                "HTTP {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body[..response.body.len().min(300)])
            )),
            Err(e) => Some(e.to_string()),
        };
        if let Some(failure) = failure {
            r.failed += 1;
            r.first_error.get_or_insert(failure);
        }
    }
}

impl LoadReport {
    fn add(&mut self, other: LoadReport) {
        self.sent += other.sent;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.unsent += other.unsent;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.short_outputs += other.short_outputs;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(api: Api) -> Load {
        Load {
            requests: 1,
            prompt_len: 3,
            output_len: 7,
            concurrency: 1,
            api,
            model: Some("m".to_owned()),
        }
    }

    fn route() -> Route {
        Route {
            path: "/p".to_owned(),
            ignore_eos_field: "run_to_the_end".to_owned(),
        }
    }

    #[test]
    fn a_completion_asks_for_exactly_p_prompt_tokens_and_o_output_tokens() {
        let body: serde_json::Value =
            serde_json::from_slice(&load(Api::Completions).body(0, &route())).unwrap();
        assert_eq!(body["prompt"].as_array().map(Vec::len), Some(3));
        assert_eq!(body["max_tokens"], 7);
        assert_eq!(body["run_to_the_end"], true, "the engine's field: {body}");
        assert_eq!(body["model"], "m");
    }

    #[test]
    fn the_route_is_the_settings_api_path_and_field() {
        let settings = npuprof_repository::engine::EngineDefinition::vllm_ascend()
            .settings(
                npuprof_repository::engine::ConfigStyle::Env,
                std::path::Path::new("d"),
                1,
                false,
            )
            .unwrap();
        let chat = load(Api::Chat).route(&settings);
        assert_eq!(chat.path, settings.chat_path);
        assert_eq!(chat.ignore_eos_field, "ignore_eos");
        assert_eq!(
            load(Api::Completions).route(&settings).path,
            settings.completions_path
        );
    }

    #[test]
    fn a_chat_request_has_one_user_message_of_p_words() {
        let body: serde_json::Value =
            serde_json::from_slice(&load(Api::Chat).body(0, &route())).unwrap();
        assert_eq!(body["messages"][0]["content"], "hello hello hello");
    }
}
