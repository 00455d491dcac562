//! The fake skill's tracker client: the handful of GitHub REST calls a
//! skill makes, over blocking HTTP (`ureq`), authenticated with
//! `Authorization: Bearer <token>` when a token is given.

use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    #[error("the tracker is not configured: {0}")]
    NotConfigured(&'static str),
    #[error("{method} {url}: {detail}")]
    Transport {
        method: &'static str,
        url: String,
        detail: String,
    },
    #[error("{method} {url} answered {status}: {body}")]
    Status {
        method: &'static str,
        url: String,
        status: u16,
        body: String,
    },
    #[error("{method} {url} answered with something that is not the expected JSON: {body}")]
    BadAnswer {
        method: &'static str,
        url: String,
        body: String,
    },
}

/// How a merge attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    Merged {
        sha: String,
    },
    /// 405/409: the tracker refused (not open, not mergeable).
    Refused {
        message: String,
    },
}

#[derive(Debug)]
pub struct TrackerClient {
    agent: ureq::Agent,
    repo_url: String,
    token: Option<String>,
}

impl TrackerClient {
    /// `base_url` like `http://127.0.0.1:4567`, `repo` like `acme/app`.
    pub fn new(base_url: &str, repo: &str, token: Option<String>) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        Self {
            agent,
            repo_url: format!("{}/repos/{repo}", base_url.trim_end_matches('/')),
            token,
        }
    }

    fn call(
        &self,
        method: &'static str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, String), TrackerError> {
        let url = format!("{}{path}", self.repo_url);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let response = match (method, body) {
            ("GET", _) => {
                let mut req = self.agent.get(&url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
            ("DELETE", _) => {
                let mut req = self.agent.delete(&url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
            (m, body) => {
                let mut req = if m == "PUT" {
                    self.agent.put(&url)
                } else {
                    self.agent.post(&url)
                };
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.send_json(body.unwrap_or_else(|| json!({})))
            }
        };
        let mut response = response.map_err(|e| TrackerError::Transport {
            method,
            url: url.clone(),
            detail: e.to_string(),
        })?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| TrackerError::Transport {
                method,
                url: url.clone(),
                detail: e.to_string(),
            })?;
        Ok((status, text))
    }

    fn json(
        &self,
        method: &'static str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, TrackerError> {
        let url = format!("{}{path}", self.repo_url);
        let (status, text) = self.call(method, path, body)?;
        if !(200..300).contains(&status) {
            return Err(TrackerError::Status {
                method,
                url,
                status,
                body: text,
            });
        }
        serde_json::from_str(&text).map_err(|_| TrackerError::BadAnswer {
            method,
            url,
            body: text,
        })
    }

    fn field<'a>(
        &self,
        value: &'a Value,
        pointer: &str,
        method: &'static str,
        path: &str,
    ) -> Result<&'a Value, TrackerError> {
        value
            .pointer(pointer)
            .filter(|v| !v.is_null())
            .ok_or_else(|| TrackerError::BadAnswer {
                method,
                url: format!("{}{path}", self.repo_url),
                body: value.to_string(),
            })
    }

    /// `(branch, base, head sha)` of a PR.
    pub fn pull(&self, number: u64) -> Result<(String, String, Option<String>), TrackerError> {
        let path = format!("/pulls/{number}");
        let pr = self.json("GET", &path, None)?;
        let branch = self
            .field(&pr, "/head/ref", "GET", &path)?
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let base = pr
            .pointer("/base/ref")
            .and_then(Value::as_str)
            .unwrap_or("main")
            .to_owned();
        let sha = pr
            .pointer("/head/sha")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok((branch, base, sha))
    }

    /// Opens a PR; its number.
    pub fn create_pull(
        &self,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
    ) -> Result<u64, TrackerError> {
        let pr = self.json(
            "POST",
            "/pulls",
            Some(json!({ "title": title, "head": head, "base": base, "body": body })),
        )?;
        Ok(self
            .field(&pr, "/number", "POST", "/pulls")?
            .as_u64()
            .unwrap_or_default())
    }

    pub fn comment(&self, number: u64, body: &str) -> Result<(), TrackerError> {
        self.json(
            "POST",
            &format!("/issues/{number}/comments"),
            Some(json!({ "body": body })),
        )
        .map(drop)
    }

    /// The latest gate the loop posted on an open dashboard issue
    /// (labelled `sdd-loop-dashboard`): the issue and the gate's id.
    pub fn latest_gate(&self) -> Result<Option<(u64, String)>, TrackerError> {
        let issues = self.json("GET", "/issues?state=open&labels=sdd-loop-dashboard", None)?;
        let mut latest = None;
        for number in issues
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["number"].as_u64())
        {
            let comments = self.json(
                "GET",
                &format!("/issues/{number}/comments?per_page=100"),
                None,
            )?;
            for c in comments.as_array().into_iter().flatten() {
                let body = c["body"].as_str().unwrap_or_default();
                if let Some(at) = body.find("id `g-") {
                    let id: String = body[at + 4..].chars().take_while(|ch| *ch != '`').collect();
                    latest = Some((number, id));
                }
            }
        }
        Ok(latest)
    }

    pub fn reply(&self, pr: u64, to: u64, body: &str) -> Result<(), TrackerError> {
        self.json(
            "POST",
            &format!("/pulls/{pr}/comments/{to}/replies"),
            Some(json!({ "body": body })),
        )
        .map(drop)
    }

    pub fn merge(&self, pr: u64) -> Result<Merge, TrackerError> {
        let path = format!("/pulls/{pr}/merge");
        let (status, text) = self.call("PUT", &path, Some(json!({})))?;
        let url = format!("{}{path}", self.repo_url);
        let value: Value = serde_json::from_str(&text).map_err(|_| TrackerError::BadAnswer {
            method: "PUT",
            url: url.clone(),
            body: text.clone(),
        })?;
        match status {
            200..=299 => Ok(Merge::Merged {
                sha: value["sha"].as_str().unwrap_or_default().to_owned(),
            }),
            405 | 409 => Ok(Merge::Refused {
                message: value["message"].as_str().unwrap_or("refused").to_owned(),
            }),
            _ => Err(TrackerError::Status {
                method: "PUT",
                url,
                status,
                body: text,
            }),
        }
    }

    pub fn open_issue(
        &self,
        title: &str,
        body: &str,
        labels: &[String],
    ) -> Result<(), TrackerError> {
        self.json(
            "POST",
            "/issues",
            Some(json!({ "title": title, "body": body, "labels": labels })),
        )
        .map(drop)
    }

    pub fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), TrackerError> {
        self.json(
            "POST",
            &format!("/issues/{number}/labels"),
            Some(json!({ "labels": labels })),
        )
        .map(drop)
    }

    pub fn remove_label(&self, number: u64, label: &str) -> Result<(), TrackerError> {
        let path = format!(
            "/issues/{number}/labels/{}",
            utf8_percent_encode(label, SEGMENT)
        );
        self.json("DELETE", &path, None).map(drop)
    }
}
