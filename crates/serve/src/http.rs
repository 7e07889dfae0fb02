//! A small HTTP/1.1 client over tokio and hyper (no TLS): one connection per request, every
//! request bounded in time and its response body in size.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;

use crate::ServeError;

/// The largest response body read (a completion's JSON is far smaller).
pub const MAX_BODY: usize = 16 << 20;

/// Where the server listens: `http://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
}

impl Endpoint {
    /// Parses `http://HOST[:PORT][/]` (port 80 by default); anything else is refused.
    pub fn parse(url: &str) -> Result<Self, ServeError> {
        let bad = |why: &str| ServeError::BadUrl {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("only http:// is supported (no TLS)"))?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return Err(bad("give the server's address only, as http://HOST:PORT"));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| bad("the port is not a number from 1 to 65535"))?,
            ),
            _ => (authority, 80),
        };
        if host.is_empty() || port == 0 {
            return Err(bad("the host or port is missing"));
        }
        Ok(Self {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
        })
    }

    /// `HOST:PORT` and the port (the address collect derives from a command).
    pub fn new(host: &str, port: u16) -> Self {
        Self {
            host: host.to_owned(),
            port,
        }
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        if self.host.contains(':') {
            format!("http://[{}]:{}", self.host, self.port)
        } else {
            format!("http://{}:{}", self.host, self.port)
        }
    }

    fn authority(&self) -> String {
        self.url().trim_start_matches("http://").to_owned()
    }
}

/// A response: its status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body (at most [`MAX_BODY`] bytes).
    pub body: Bytes,
}

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Nothing listens there (yet).
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    /// No response within the time allowed.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The connection broke or the response was not HTTP.
    #[error("{0}")]
    Protocol(String),
}

/// Sends one request (`body` as JSON when given) and reads the whole response (at most
/// [`MAX_BODY`] bytes), within `timeout`.
pub async fn request(
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Response, HttpError> {
    request_capped(endpoint, method, path, body, timeout, MAX_BODY).await
}

/// [`request`] reading at most `cap` bytes of the answer (a longer one is an error).
pub async fn request_capped(
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    timeout: Duration,
    cap: usize,
) -> Result<Response, HttpError> {
    tokio::time::timeout(timeout, send(endpoint, method, path, body, cap))
        .await
        .map_err(|_| HttpError::Timeout(timeout))?
}

async fn send(
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    cap: usize,
) -> Result<Response, HttpError> {
    let stream = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(HttpError::Connect)?;
    let protocol = |e: hyper::Error| HttpError::Protocol(e.to_string());
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(protocol)?;
    let driver = tokio::spawn(connection);
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, endpoint.authority());
    if body.is_some() {
        builder = builder.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    let request = builder
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| HttpError::Protocol(e.to_string()))?;
    let response = sender.send_request(request).await.map_err(protocol)?;
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), cap.min(MAX_BODY))
        .collect()
        .await
        .map_err(|e| HttpError::Protocol(format!("reading the response: {e}")))?
        .to_bytes();
    driver.abort();
    Ok(Response { status, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_to_host_and_port() {
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:8000/").unwrap(),
            Endpoint::new("127.0.0.1", 8000)
        );
        assert_eq!(Endpoint::parse("http://h").unwrap(), Endpoint::new("h", 80));
        assert_eq!(
            Endpoint::parse("http://[::1]:9").unwrap().url(),
            "http://[::1]:9"
        );
        for bad in [
            "https://h:1",
            "h:1",
            "http://h:x",
            "http://h:1/v1",
            "http://",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }
}
