//! Client for OpenAI-compatible `/v1/embeddings` endpoints (OpenAI, vLLM, Ollama, llama.cpp, ...).

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use serde::Deserialize;

use super::{l2_normalize, Embedder};

/// Most inputs sent in one request (OpenAI accepts up to 2048; smaller keeps requests and retries cheap).
pub const MAX_BATCH: usize = 128;
/// Whole-request timeout.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of an error response body quoted in the error message.
const ERROR_BODY_LIMIT: usize = 300;

/// Embeds texts via an OpenAI-compatible HTTP API.
pub struct OpenAiEmbedder {
    endpoint: String,
    model: String,
    model_id: String,
    api_key: Option<String>,
    configured_dims: Option<usize>,
    learned_dims: OnceLock<usize>,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

/// The full embeddings URL for a configured base `url`:
/// `…/embeddings` is used as is, `…/v1` gets `/embeddings` appended, anything else gets `/v1/embeddings`.
pub fn endpoint_url(url: &str) -> String {
    let base = url.trim_end_matches('/');
    if base.ends_with("/embeddings") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    }
}

impl OpenAiEmbedder {
    /// Creates a client; `dims` is the expected vector length, or `None` to learn it from the first response.
    /// An empty `api_key` counts as none. No request is made until `embed`.
    pub fn new(url: String, model: String, api_key: Option<String>, dims: Option<usize>) -> anyhow::Result<Self> {
        if url.trim().is_empty() {
            bail!("OpenAI embedder URL is empty");
        }
        if model.trim().is_empty() {
            bail!("OpenAI embedder model name is empty");
        }
        if dims == Some(0) {
            bail!("OpenAI embedder dims must be at least 1");
        }
        let agent = ureq::AgentBuilder::new().timeout(TIMEOUT).build();
        Ok(Self {
            endpoint: endpoint_url(&url),
            model_id: format!("openai:{model}"),
            model,
            api_key: api_key.filter(|k| !k.is_empty()),
            configured_dims: dims,
            learned_dims: OnceLock::new(),
            agent,
        })
    }

    /// Removes the API key from text that is about to go into an error message.
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) => text.replace(key.as_str(), "<redacted>"),
            None => text.to_string(),
        }
    }

    /// One HTTP request for at most `MAX_BATCH` texts; returns raw (unnormalised) vectors in input order.
    fn request(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let body = serde_json::json!({ "model": self.model, "input": texts });
        let mut req = self.agent.post(&self.endpoint).set("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        let resp = match req.send_json(body) {
            Ok(resp) => resp,
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                let snippet: String = text.chars().take(ERROR_BODY_LIMIT).collect();
                bail!("embedding request to {} failed with HTTP {code}: {}", self.endpoint, self.redact(&snippet));
            }
            Err(e) => bail!("embedding request to {} failed: {}", self.endpoint, self.redact(&e.to_string())),
        };
        let parsed: EmbeddingResponse =
            resp.into_json().with_context(|| format!("invalid embeddings response from {}", self.endpoint))?;

        if parsed.data.len() != texts.len() {
            bail!(
                "embeddings response from {} has {} vectors for {} inputs",
                self.endpoint,
                parsed.data.len(),
                texts.len()
            );
        }
        // Servers may answer out of order; `index` is authoritative and must cover 0..n exactly once.
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in parsed.data {
            let slot = slots
                .get_mut(item.index)
                .ok_or_else(|| anyhow!("embeddings response has out-of-range index {}", item.index))?;
            if slot.replace(item.embedding).is_some() {
                bail!("embeddings response repeats index {}", item.index);
            }
        }
        // Every slot is filled: n items, distinct indices, all < n.
        Ok(slots.into_iter().flatten().collect())
    }

    /// Checks `len` against the configured or previously learned dimension, learning it on first use.
    fn check_dims(&self, len: usize) -> anyhow::Result<()> {
        let expected = match self.configured_dims {
            Some(d) => d,
            None => *self.learned_dims.get_or_init(|| len),
        };
        if len != expected || len == 0 {
            bail!("embedding from {} has {len} dimensions, expected {expected}", self.model_id);
        }
        Ok(())
    }
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The configured dims; otherwise the length learned from the first response, or 0 before any response.
    fn dims(&self) -> usize {
        self.configured_dims.or_else(|| self.learned_dims.get().copied()).unwrap_or(0)
    }

    fn is_semantic(&self) -> bool {
        true
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_BATCH) {
            for mut v in self.request(chunk)? {
                self.check_dims(v.len())?;
                if !l2_normalize(&mut v) {
                    bail!("{} returned a zero or non-finite embedding", self.model_id);
                }
                out.push(v);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is the test failure
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;
    use std::thread;

    /// What the fake server saw in one request.
    struct Seen {
        request_line: String,
        headers: Vec<(String, String)>,
        body: serde_json::Value,
    }

    impl Seen {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }
    }

    /// Serves one canned response per entry of `responses` (status, body), then exits.
    /// Returns the base URL and a receiver of what each request looked like.
    fn serve(responses: Vec<(u16, String)>) -> (String, mpsc::Receiver<Seen>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for (status, body) in responses {
                let (stream, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                reader.read_line(&mut request_line).unwrap();
                let mut headers = Vec::new();
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    let (k, v) = line.split_once(':').unwrap();
                    headers.push((k.trim().to_string(), v.trim().to_string()));
                }
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .map(|(_, v)| v.parse().unwrap())
                    .unwrap_or(0);
                let mut buf = vec![0u8; len];
                reader.read_exact(&mut buf).unwrap();
                let json = serde_json::from_slice(&buf).unwrap_or(serde_json::Value::Null);
                tx.send(Seen { request_line: request_line.trim_end().to_string(), headers, body: json }).unwrap();
                let reason = if status == 200 { "OK" } else { "Error" };
                let mut stream = stream;
                write!(
                    stream,
                    "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                stream.flush().unwrap();
            }
        });
        (format!("http://{addr}"), rx)
    }

    fn texts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("text {i}")).collect()
    }

    #[test]
    fn restores_index_order_normalises_and_sends_auth() {
        // Index 1 first, index 0 second; unnormalised vectors.
        let body = r#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,2.0,0.0]},
            {"object":"embedding","index":0,"embedding":[3.0,0.0,4.0]}],
            "model":"m","usage":{"prompt_tokens":4,"total_tokens":4}}"#;
        let (url, rx) = serve(vec![(200, body.to_string())]);
        let e = OpenAiEmbedder::new(url, "test-model".into(), Some("sk-test".into()), None).unwrap();
        assert_eq!(e.dims(), 0);
        let out = e.embed(&texts(2)).unwrap();
        assert_eq!(out, vec![vec![0.6, 0.0, 0.8], vec![0.0, 1.0, 0.0]]);
        assert_eq!(e.dims(), 3);
        assert_eq!(e.model_id(), "openai:test-model");

        let seen = rx.recv().unwrap();
        assert_eq!(seen.request_line, "POST /v1/embeddings HTTP/1.1");
        assert_eq!(seen.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(seen.body, serde_json::json!({"model": "test-model", "input": ["text 0", "text 1"]}));
    }

    #[test]
    fn no_key_means_no_auth_header() {
        let body = r#"{"data":[{"index":0,"embedding":[1.0,1.0]}]}"#;
        let (url, rx) = serve(vec![(200, body.to_string())]);
        let e = OpenAiEmbedder::new(format!("{url}/v1/"), "m".into(), Some(String::new()), None).unwrap();
        e.embed(&texts(1)).unwrap();
        let seen = rx.recv().unwrap();
        assert_eq!(seen.request_line, "POST /v1/embeddings HTTP/1.1");
        assert!(seen.header("authorization").is_none());
    }

    #[test]
    fn server_error_is_err_without_key() {
        let (url, _rx) = serve(vec![(500, r#"{"error":"boom sk-secret"}"#.to_string())]);
        let e = OpenAiEmbedder::new(url, "m".into(), Some("sk-secret".into()), None).unwrap();
        let err = e.embed(&texts(1)).unwrap_err().to_string();
        assert!(err.contains("500"), "{err}");
        assert!(!err.contains("sk-secret"), "{err}");
    }

    #[test]
    fn wrong_count_is_err() {
        let body = r#"{"data":[{"index":0,"embedding":[1.0,0.0]}]}"#;
        let (url, _rx) = serve(vec![(200, body.to_string())]);
        let e = OpenAiEmbedder::new(url, "m".into(), None, None).unwrap();
        let err = e.embed(&texts(2)).unwrap_err().to_string();
        assert!(err.contains("1 vectors for 2 inputs"), "{err}");
    }

    #[test]
    fn dimension_mismatch_and_bad_indices_are_err() {
        let ok = r#"{"data":[{"index":0,"embedding":[1.0,0.0]}]}"#;
        let short = r#"{"data":[{"index":0,"embedding":[1.0]}]}"#;
        let dup = r#"{"data":[{"index":0,"embedding":[1.0,0.0]},{"index":0,"embedding":[0.0,1.0]}]}"#;
        let oob = r#"{"data":[{"index":5,"embedding":[1.0,0.0]}]}"#;
        let responses = [ok, short, dup, oob].iter().map(|b| (200, b.to_string())).collect();
        let (url, _rx) = serve(responses);
        let e = OpenAiEmbedder::new(url.clone(), "m".into(), None, None).unwrap();
        e.embed(&texts(1)).unwrap(); // learns dims = 2
        assert!(e.embed(&texts(1)).is_err()); // 1 != 2
        assert!(e.embed(&texts(2)).is_err()); // duplicate index
        assert!(e.embed(&texts(1)).is_err()); // index out of range

        let (url, _rx) = serve(vec![(200, ok.to_string())]);
        let e = OpenAiEmbedder::new(url, "m".into(), None, Some(3)).unwrap();
        assert_eq!(e.dims(), 3);
        assert!(e.embed(&texts(1)).is_err()); // 2 != configured 3
    }

    #[test]
    fn batches_at_most_128_per_request() {
        let item = |i: usize| format!(r#"{{"index":{i},"embedding":[1.0,{i}.0]}}"#);
        let body = |n: usize| format!(r#"{{"data":[{}]}}"#, (0..n).map(item).collect::<Vec<_>>().join(","));
        let (url, rx) = serve(vec![(200, body(128)), (200, body(2))]);
        let e = OpenAiEmbedder::new(url, "m".into(), None, None).unwrap();
        let out = e.embed(&texts(130)).unwrap();
        assert_eq!(out.len(), 130);
        assert_eq!(rx.recv().unwrap().body["input"].as_array().unwrap().len(), 128);
        let second = rx.recv().unwrap();
        assert_eq!(second.body["input"], serde_json::json!(["text 128", "text 129"]));
        // Vector 129 came back as [1, 1] (index 1 of the second request).
        assert!((out[129][0] - out[129][1]).abs() < 1e-6);
        assert!(e.embed(&[]).unwrap().is_empty());
    }

    #[test]
    fn connection_refused_is_err() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let e = OpenAiEmbedder::new(format!("http://127.0.0.1:{port}"), "m".into(), None, None).unwrap();
        assert!(e.embed(&texts(1)).is_err());
    }

    #[test]
    fn endpoint_forms() {
        assert_eq!(endpoint_url("http://h"), "http://h/v1/embeddings");
        assert_eq!(endpoint_url("http://h/"), "http://h/v1/embeddings");
        assert_eq!(endpoint_url("http://h/v1"), "http://h/v1/embeddings");
        assert_eq!(endpoint_url("http://h/v1/"), "http://h/v1/embeddings");
        assert_eq!(endpoint_url("http://h/api/embeddings"), "http://h/api/embeddings");
        assert!(OpenAiEmbedder::new(String::new(), "m".into(), None, None).is_err());
        assert!(OpenAiEmbedder::new("http://h".into(), "m".into(), None, Some(0)).is_err());
    }
}
