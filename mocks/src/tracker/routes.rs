//! The GitHub REST v3 subset the mock tracker answers, as a pure function
//! from a request and the [`World`] to a response (no HTTP here, so every
//! route is unit-testable).
//!
//! Under `/repos/{owner}/{repo}`: `GET /issues` (issues and pull requests,
//! as GitHub lists them), `POST /issues`, `GET /issues/{n}`,
//! `GET|POST /issues/{n}/comments` (`since` filters by last update),
//! `PATCH /issues/{n}`, `PATCH /issues/comments/{id}`,
//! `GET /collaborators/{user}/permission`,
//! `GET|POST|PUT /issues/{n}/labels`, `DELETE /issues/{n}/labels/{name}`,
//! `GET|POST /pulls`, `GET /pulls/{n}`, `GET|PUT /pulls/{n}/merge`,
//! `GET|POST /pulls/{n}/comments`,
//! `POST /pulls/{n}/comments/{id}/replies`, `GET|POST /pulls/{n}/reviews`;
//! plus `GET /repos/{owner}/{repo}` and `GET /user`. Lists are paginated
//! (`per_page` default 30, max 100; `page` from 1) with a real `Link`
//! header of absolute URLs on the server's own base URI. Anything else is
//! 404 `{"message":"Not Found"}`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use super::world::{NewIssue, World, WorldError};
use crate::fixture::ReviewState;

const DOCS: &str = "https://docs.github.com/rest";
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A request, already taken apart.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub method: String,
    /// As sent (percent-encoded).
    pub path: String,
    /// Path segments, percent-decoded.
    pub segments: Vec<String>,
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl ApiRequest {
    fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Json(Value),
    /// Sent as-is with a JSON content type (for malformed-body faults).
    Raw(String),
    Empty,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl ApiResponse {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Body::Json(body),
        }
    }

    /// GitHub's error shape: `{"message": …, "documentation_url": …}`.
    pub fn message(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({ "message": message, "documentation_url": DOCS }),
        )
    }

    /// 422 `Validation Failed` with GitHub's `errors[]`: each names the
    /// `resource`, a `code` (`missing_field`, `invalid`, `already_exists`,
    /// `custom`) and the `field`, or a `message` for `custom`.
    pub fn validation(error: Value) -> Self {
        Self::json(
            422,
            json!({
                "message": "Validation Failed",
                "errors": [error],
                "documentation_url": DOCS,
                "status": "422",
            }),
        )
    }

    pub fn not_found() -> Self {
        Self::message(404, "Not Found")
    }

    fn header(mut self, name: &str, value: String) -> Self {
        self.headers.push((name.to_owned(), value));
        self
    }
}

impl From<WorldError> for ApiResponse {
    fn from(err: WorldError) -> Self {
        match err {
            WorldError::NoSuchNumber(_)
            | WorldError::NotAPull(_)
            | WorldError::NoSuchComment { .. } => Self::not_found(),
            WorldError::NoSuchLabel { .. } => Self::message(404, "Label does not exist"),
            WorldError::NotOpen(_) => Self::message(405, "Pull Request is not mergeable"),
            WorldError::NumberTaken(_) => Self::validation(
                json!({ "resource": "Issue", "code": "already_exists", "field": "number" }),
            ),
            WorldError::Invalid(message) => Self::validation(
                json!({ "resource": "PullRequest", "code": "custom", "message": message }),
            ),
        }
    }
}

type Answer = Result<ApiResponse, ApiResponse>;

/// Answers `req` as the tracker; `viewer` acts for every mutation.
pub fn handle(world: &mut World, req: &ApiRequest) -> ApiResponse {
    let segments: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let answer = match (req.method.as_str(), segments.as_slice()) {
        ("GET", ["user"]) => Ok(ApiResponse::json(200, world.viewer_view())),
        (_, ["repos", owner, name, rest @ ..])
            if *owner == world.owner() && *name == world.name() =>
        {
            repo_route(world, req, rest)
        }
        // GitHub's own pagination links name the repository by id.
        (_, ["repositories", id, rest @ ..])
            if id.parse::<u64>().ok() == Some(world.site().repo_id()) =>
        {
            repo_route(world, req, rest)
        }
        _ => Err(ApiResponse::not_found()),
    };
    answer.unwrap_or_else(|e| e)
}

fn number(text: &str) -> Result<u64, ApiResponse> {
    text.parse().map_err(|_| ApiResponse::not_found())
}

fn repo_route(world: &mut World, req: &ApiRequest, rest: &[&str]) -> Answer {
    let viewer = world.viewer().to_owned();
    if !world.has_issues() && rest.first() == Some(&"issues") {
        return Err(ApiResponse::message(
            410,
            "Issues are disabled for this repo",
        ));
    }
    match (req.method.as_str(), rest) {
        ("GET", []) => Ok(ApiResponse::json(200, world.repo_view())),
        ("GET", ["issues"]) => {
            let state = req.query("state").unwrap_or("open");
            let labels: Vec<String> = req
                .query("labels")
                .map(|l| {
                    l.split(',')
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let items = ordered(world.list_issues(state, &labels), req);
            Ok(paginate(world, req, items))
        }
        ("POST", ["issues"]) => create_issue(world, req, viewer),
        ("GET", ["issues", n]) => Ok(ApiResponse::json(200, world.issue_view(number(n)?)?)),
        ("GET", ["issues", n, "comments"]) => list_comments(world, req, number(n)?),
        ("PATCH", ["issues", "comments", id]) => {
            let body = required_str(&json_body(req)?, "IssueComment", "body")?;
            Ok(ApiResponse::json(
                200,
                world.edit_issue_comment(number(id)?, &body)?,
            ))
        }
        ("PATCH", ["issues", n]) => edit_issue(world, req, number(n)?),
        ("GET", ["collaborators", user, "permission"]) => {
            Ok(ApiResponse::json(200, world.permission_view(user)))
        }
        ("POST", ["issues", n, "comments"]) => {
            let body = required_str(&json_body(req)?, "IssueComment", "body")?;
            let comment = world.add_issue_comment(number(n)?, &viewer, &body)?;
            Ok(ApiResponse::json(201, comment))
        }
        ("GET", ["issues", n, "labels"]) => {
            Ok(ApiResponse::json(200, world.labels_view(number(n)?)?))
        }
        ("POST" | "PUT", ["issues", n, "labels"]) => {
            let n = number(n)?;
            let labels = label_list(&json_body(req)?)?;
            if req.method == "PUT" {
                world.set_labels(n, &labels)?;
            } else {
                world.add_labels(n, &labels)?;
            }
            Ok(ApiResponse::json(200, world.labels_view(n)?))
        }
        ("DELETE", ["issues", n, "labels", name]) => {
            let n = number(n)?;
            world.remove_label(n, name)?;
            Ok(ApiResponse::json(200, world.labels_view(n)?))
        }
        ("GET", ["pulls"]) => {
            let state = req.query("state").unwrap_or("open");
            let items = ordered(
                world.list_pulls(state, req.query("head"), req.query("base")),
                req,
            );
            Ok(paginate(world, req, items))
        }
        ("POST", ["pulls"]) => {
            let body = json_body(req)?;
            let title = required_str(&body, "PullRequest", "title")?;
            let head = required_str(&body, "PullRequest", "head")?;
            let base = body.get("base").and_then(Value::as_str).unwrap_or("");
            let text = body.get("body").and_then(Value::as_str).unwrap_or("");
            let pull = world.create_pull(&title, &head, base, text, &viewer)?;
            Ok(ApiResponse::json(201, pull))
        }
        ("GET", ["pulls", n]) => Ok(ApiResponse::json(200, world.pull_view(number(n)?)?)),
        ("GET", ["pulls", n, "merge"]) => {
            if world.is_merged(number(n)?)? {
                Ok(ApiResponse {
                    status: 204,
                    headers: Vec::new(),
                    body: Body::Empty,
                })
            } else {
                Err(ApiResponse::not_found())
            }
        }
        ("PUT", ["pulls", n, "merge"]) => {
            let sha = world.merge_pull_as(number(n)?, &viewer)?;
            Ok(ApiResponse::json(
                200,
                json!({ "sha": sha, "merged": true, "message": "Pull Request successfully merged" }),
            ))
        }
        ("GET", ["pulls", n, "comments"]) => {
            let items = world.review_comments(number(n)?)?;
            Ok(paginate(world, req, items))
        }
        ("POST", ["pulls", n, "comments"]) => {
            let body = json_body(req)?;
            let text = required_str(&body, "PullRequestReviewComment", "body")?;
            let n = number(n)?;
            let comment = match body.get("in_reply_to").and_then(Value::as_u64) {
                Some(to) => world.reply_to_review_comment(n, to, &viewer, &text)?,
                None => {
                    let path = body.get("path").and_then(Value::as_str);
                    world.add_review_comment(n, &viewer, &text, path)?
                }
            };
            Ok(ApiResponse::json(201, comment))
        }
        ("POST", ["pulls", n, "comments", id, "replies"]) => {
            let text = required_str(&json_body(req)?, "PullRequestReviewComment", "body")?;
            let reply = world.reply_to_review_comment(number(n)?, number(id)?, &viewer, &text)?;
            Ok(ApiResponse::json(201, reply))
        }
        ("GET", ["pulls", n, "reviews"]) => {
            let items = world.reviews(number(n)?)?;
            Ok(paginate(world, req, items))
        }
        ("POST", ["pulls", n, "reviews"]) => {
            let body = json_body(req)?;
            let text = body.get("body").and_then(Value::as_str).unwrap_or("");
            let state = match body.get("event").and_then(Value::as_str) {
                Some("APPROVE") => ReviewState::Approved,
                Some("REQUEST_CHANGES") => ReviewState::ChangesRequested,
                _ => ReviewState::Commented,
            };
            Ok(ApiResponse::json(
                200,
                world.add_review(number(n)?, &viewer, state, text)?,
            ))
        }
        _ => Err(ApiResponse::not_found()),
    }
}

/// `POST /issues`: a new issue by the viewer.
fn create_issue(world: &mut World, req: &ApiRequest, viewer: String) -> Answer {
    let body = json_body(req)?;
    let new = NewIssue {
        number: None,
        title: required_str(&body, "Issue", "title")?,
        body: body
            .get("body")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        labels: match body.get("labels") {
            Some(_) => label_list(&body)?,
            None => Vec::new(),
        },
        author: viewer.clone(),
    };
    let n = world.add_issue(&new)?;
    Ok(ApiResponse::json(201, world.issue_view(n)?))
}

/// `GET /issues/{n}/comments`, `since` keeping those updated at or after it.
fn list_comments(world: &World, req: &ApiRequest, n: u64) -> Answer {
    let since = match req.query("since") {
        Some(s) => Some(s.parse::<jiff::Timestamp>().map_err(|_| {
            ApiResponse::validation(
                json!({ "resource": "IssueComment", "code": "invalid", "field": "since" }),
            )
        })?),
        None => None,
    };
    let items = world.issue_comments_since(n, since)?;
    Ok(paginate(world, req, items))
}

/// `PATCH /issues/{n}`: the body, when given.
fn edit_issue(world: &mut World, req: &ApiRequest, n: u64) -> Answer {
    if let Some(body) = json_body(req)?.get("body").and_then(Value::as_str) {
        world.edit_issue_body(n, body)?;
    }
    Ok(ApiResponse::json(200, world.issue_view(n)?))
}

/// GitHub lists issues and pulls newest first unless `direction=asc`.
fn ordered(mut items: Vec<(u64, Value)>, req: &ApiRequest) -> Vec<Value> {
    if req.query("direction") != Some("asc") {
        items.reverse();
    }
    items.into_iter().map(|(_, v)| v).collect()
}

fn json_body(req: &ApiRequest) -> Result<Value, ApiResponse> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&req.body)
        .map_err(|_| ApiResponse::message(400, "Problems parsing JSON"))
}

fn required_str(body: &Value, resource: &str, field: &str) -> Result<String, ApiResponse> {
    match body.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        None | Some(Value::Null) => Err(ApiResponse::validation(
            json!({ "resource": resource, "code": "missing_field", "field": field }),
        )),
        Some(_) => Err(ApiResponse::validation(
            json!({ "resource": resource, "code": "invalid", "field": field }),
        )),
    }
}

/// `{"labels": [...]}` or a bare array, as GitHub accepts both.
fn label_list(body: &Value) -> Result<Vec<String>, ApiResponse> {
    let list = body.get("labels").unwrap_or(body);
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .ok_or_else(|| {
            ApiResponse::validation(
                json!({ "resource": "Label", "code": "invalid", "field": "labels" }),
            )
        })
}

fn page_url(world: &World, req: &ApiRequest, page: u64) -> String {
    let mut pairs: Vec<(String, String)> = req
        .query
        .iter()
        .filter(|(k, _)| k != "page")
        .cloned()
        .collect();
    pairs.push(("page".to_owned(), page.to_string()));
    let query = pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, QUERY_VALUE),
                utf8_percent_encode(v, QUERY_VALUE)
            )
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{}{}?{query}", world.base_uri(), canonical_path(world, req))
}

/// The path as GitHub writes it in `Link` headers: a repository route
/// by the repository's id (`/repositories/1296269/issues`), whichever form
/// the request used.
fn canonical_path(world: &World, req: &ApiRequest) -> String {
    let rest = match req.segments.as_slice() {
        [first, _, _, rest @ ..] if first == "repos" => rest,
        [first, _, rest @ ..] if first == "repositories" => rest,
        _ => return req.path.clone(),
    };
    let mut path = format!("/repositories/{}", world.site().repo_id());
    for segment in rest {
        path.push('/');
        path.push_str(&utf8_percent_encode(segment, QUERY_VALUE).to_string());
    }
    path
}

/// One page of `items`, with GitHub's `Link` header when there is more
/// than one page.
fn paginate(world: &World, req: &ApiRequest, items: Vec<Value>) -> ApiResponse {
    let per_page = req
        .query("per_page")
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page = req
        .query("page")
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1);
    let total = items.len() as u64;
    let last = total.div_ceil(per_page).max(1);
    let start = usize::try_from((page - 1).saturating_mul(per_page)).unwrap_or(usize::MAX);
    let slice: Vec<Value> = items
        .into_iter()
        .skip(start)
        .take(usize::try_from(per_page).unwrap_or(usize::MAX))
        .collect();
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!(
            "<{}>; rel=\"prev\"",
            page_url(world, req, (page - 1).min(last))
        ));
    }
    if page < last {
        links.push(format!(
            "<{}>; rel=\"next\"",
            page_url(world, req, page + 1)
        ));
        links.push(format!("<{}>; rel=\"last\"", page_url(world, req, last)));
    }
    if page > 1 {
        links.push(format!("<{}>; rel=\"first\"", page_url(world, req, 1)));
    }
    let response = ApiResponse::json(200, Value::Array(slice));
    if links.is_empty() {
        response
    } else {
        response.header("Link", links.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::Backlog;
    use crate::tracker::world::Clock;
    use std::path::Path;

    fn world(issues: u64) -> World {
        let mut text = "repository: acme/app\nissues:\n".to_owned();
        for n in 1..=issues {
            text.push_str(&format!("  - {{ number: {n}, title: Issue {n} }}\n"));
        }
        let backlog = Backlog::parse(Path::new("r.yaml"), &text).unwrap();
        let mut w = World::new(&backlog, "bot".into(), None, Clock::System);
        w.set_base_uri("http://127.0.0.1:4567");
        w
    }

    fn get(path: &str, query: &[(&str, &str)]) -> ApiRequest {
        ApiRequest {
            method: "GET".into(),
            path: path.into(),
            segments: path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            query: query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }

    fn link(r: &ApiResponse) -> Option<&str> {
        r.headers
            .iter()
            .find(|(k, _)| k == "Link")
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn middle_page_links_every_direction_with_absolute_urls() {
        let mut w = world(7);
        let r = handle(
            &mut w,
            &get(
                "/repos/acme/app/issues",
                &[("state", "open"), ("per_page", "3"), ("page", "2")],
            ),
        );
        let Body::Json(Value::Array(items)) = &r.body else {
            panic!("{r:?}")
        };
        assert_eq!(
            items
                .iter()
                .map(|i| i["number"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            vec![4, 3, 2]
        );
        let base = format!("http://127.0.0.1:4567/repositories/{}", w.site().repo_id());
        assert_eq!(
            link(&r).unwrap(),
            format!(
                "<{base}/issues?state=open&per_page=3&page=1>; rel=\"prev\", \
                 <{base}/issues?state=open&per_page=3&page=3>; rel=\"next\", \
                 <{base}/issues?state=open&per_page=3&page=3>; rel=\"last\", \
                 <{base}/issues?state=open&per_page=3&page=1>; rel=\"first\""
            )
        );
        // The linked page answers, by id, as GitHub's does.
        let by_id = format!("/repositories/{}/issues", w.site().repo_id());
        let next = handle(
            &mut w,
            &get(
                &by_id,
                &[("state", "open"), ("per_page", "3"), ("page", "3")],
            ),
        );
        let Body::Json(Value::Array(last)) = &next.body else {
            panic!("{next:?}")
        };
        assert_eq!(last.len(), 1);
    }

    #[test]
    fn single_page_has_no_link_and_per_page_is_capped() {
        let mut w = world(3);
        let r = handle(
            &mut w,
            &get("/repos/acme/app/issues", &[("direction", "asc")]),
        );
        assert_eq!(link(&r), None);
        let mut w = world(101);
        let r = handle(
            &mut w,
            &get("/repos/acme/app/issues", &[("per_page", "500")]),
        );
        let Body::Json(Value::Array(items)) = &r.body else {
            panic!()
        };
        assert_eq!(items.len(), 100);
        assert!(link(&r).unwrap().contains("page=2>; rel=\"last\""));
    }

    #[test]
    fn unknown_routes_and_other_repos_are_404() {
        let mut w = world(1);
        for path in [
            "/repos/acme/other/issues",
            "/repos/acme/app/nope",
            "/repos/acme/app/issues/x",
        ] {
            let r = handle(&mut w, &get(path, &[]));
            assert_eq!(r.status, 404, "{path}");
            assert_eq!(
                r.body,
                Body::Json(json!({ "message": "Not Found", "documentation_url": DOCS }))
            );
        }
    }

    #[test]
    fn bad_json_is_400_and_missing_body_is_422() {
        let mut w = world(1);
        let mut req = get("/repos/acme/app/issues/1/comments", &[]);
        req.method = "POST".into();
        req.body = b"{nope".to_vec();
        assert_eq!(handle(&mut w, &req).status, 400);
        req.body = b"{}".to_vec();
        assert_eq!(handle(&mut w, &req).status, 422);
        req.body = br#"{"body":"hi"}"#.to_vec();
        let r = handle(&mut w, &req);
        assert_eq!(r.status, 201);
        let Body::Json(c) = r.body else { panic!() };
        assert_eq!(c["user"]["login"], "bot");
    }

    #[test]
    fn validation_errors_carry_githubs_errors_list() {
        let mut w = world(1);
        let mut req = get("/repos/acme/app/pulls", &[]);
        req.method = "POST".into();
        req.body = br#"{"head":"feature/x"}"#.to_vec();
        let r = handle(&mut w, &req);
        assert_eq!(r.status, 422);
        let Body::Json(body) = &r.body else { panic!() };
        assert_eq!(body["message"], "Validation Failed");
        assert_eq!(
            body["errors"][0],
            json!({ "resource": "PullRequest", "code": "missing_field", "field": "title" })
        );
        req.body = br#"{"title":"T","head":"feature/x"}"#.to_vec();
        assert_eq!(handle(&mut w, &req).status, 201);
        let r = handle(&mut w, &req);
        let Body::Json(body) = &r.body else { panic!() };
        assert_eq!(body["errors"][0]["code"], "custom");
        assert!(
            body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("already exists")
        );
    }

    #[test]
    fn issues_disabled_is_410_on_every_issue_route() {
        let text =
            "repository: acme/app\nhas_issues: false\nissues:\n  - { number: 1, title: One }\n";
        let backlog = Backlog::parse(Path::new("r.yaml"), text).unwrap();
        let mut w = World::new(&backlog, "bot".into(), None, Clock::System);
        for path in [
            "/repos/acme/app/issues",
            "/repos/acme/app/issues/1/comments",
        ] {
            let r = handle(&mut w, &get(path, &[]));
            assert_eq!(r.status, 410, "{path}");
            let Body::Json(body) = &r.body else { panic!() };
            assert_eq!(body["message"], "Issues are disabled for this repo");
        }
        assert_eq!(
            handle(&mut w, &get("/repos/acme/app/pulls", &[])).status,
            200
        );
    }
}
