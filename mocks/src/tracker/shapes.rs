//! GitHub's object shapes, field for field: users, labels, the repository,
//! and the `_links` and URL fields around issues, pull requests and
//! comments — every field GitHub's published OpenAPI description marks
//! required (`fixtures/github-openapi/operations.json`; the contract test
//! `mocks/tests/openapi_contract.rs` holds the mock to it). URLs point at
//! the mock's own base URI, ids are stable hashes of what they name.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::hash::fnv1a;

/// Where the objects live: the server's base URI and the repository.
#[derive(Debug, Clone)]
pub struct Site<'a> {
    pub base: &'a str,
    pub owner: &'a str,
    pub name: &'a str,
    pub default_branch: &'a str,
    pub has_issues: bool,
    pub open_issues: u64,
}

/// A stable positive id (below 2^31, as GitHub's older ids are).
pub fn id_of(kind: &str, name: &str) -> u64 {
    fnv1a(format!("{kind}:{name}").as_bytes()) % 2_000_000_000 + 1
}

/// GitHub's global node id shape: a type prefix and base64-ish payload.
pub fn node_id(prefix: &str, id: u64) -> String {
    format!("{prefix}_kwDO{id:08X}")
}

/// When the fixture world "began": created/updated times of objects the
/// fixture does not date.
pub const EPOCH: &str = "2026-01-01T00:00:00Z";

pub fn epoch() -> Timestamp {
    EPOCH.parse().expect("valid timestamp")
}

impl Site<'_> {
    /// The repository's numeric id (`/repositories/{id}/…`).
    pub fn repo_id(&self) -> u64 {
        id_of("repo", &format!("{}/{}", self.owner, self.name))
    }

    /// `{base}/repos/{owner}/{name}`.
    pub fn repo_url(&self) -> String {
        format!("{}/repos/{}/{}", self.base, self.owner, self.name)
    }

    /// `{base}/{owner}/{name}` (GitHub's web pages; the mock serves none).
    pub fn html_url(&self) -> String {
        format!("{}/{}/{}", self.base, self.owner, self.name)
    }

    /// A `simple-user`.
    pub fn user(&self, login: &str) -> Value {
        let id = id_of("user", login);
        let api = format!("{}/users/{login}", self.base);
        let bot = login.ends_with("[bot]");
        json!({
            "login": login,
            "id": id,
            "node_id": node_id(if bot { "BOT" } else { "U" }, id),
            "avatar_url": format!("{}/avatars/{login}", self.base),
            "gravatar_id": "",
            "url": api,
            "html_url": format!("{}/{login}", self.base),
            "followers_url": format!("{api}/followers"),
            "following_url": format!("{api}/following{{/other_user}}"),
            "gists_url": format!("{api}/gists{{/gist_id}}"),
            "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
            "subscriptions_url": format!("{api}/subscriptions"),
            "organizations_url": format!("{api}/orgs"),
            "repos_url": format!("{api}/repos"),
            "events_url": format!("{api}/events{{/privacy}}"),
            "received_events_url": format!("{api}/received_events"),
            "type": if bot { "Bot" } else { "User" },
            "user_view_type": "public",
            "site_admin": false,
        })
    }

    /// `GET /user`: the authenticated user's public profile.
    pub fn viewer(&self, login: &str) -> Value {
        let mut user = self.user(login);
        let extra = json!({
            "name": login,
            "company": null,
            "blog": "",
            "location": null,
            "email": null,
            "hireable": null,
            "bio": null,
            "twitter_username": null,
            "public_repos": 1,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": EPOCH,
            "updated_at": EPOCH,
        });
        if let (Some(user), Value::Object(extra)) = (user.as_object_mut(), extra) {
            user.extend(extra);
        }
        user
    }

    /// A `label`.
    pub fn label(&self, name: &str) -> Value {
        let id = id_of("label", name);
        json!({
            "id": id,
            "node_id": node_id("LA", id),
            "url": format!("{}/labels/{}", self.repo_url(), encode(name)),
            "name": name,
            "description": "",
            "color": format!("{:06x}", id % 0x00ff_ffff),
            "default": false,
        })
    }

    pub fn labels(&self, names: &[String]) -> Value {
        Value::Array(names.iter().map(|n| self.label(n)).collect())
    }

    /// A `repository` (as in a pull request's `head.repo` and `base.repo`,
    /// and `GET /repos/{owner}/{repo}`).
    pub fn repository(&self) -> Value {
        let api = self.repo_url();
        let id = self.repo_id();
        let host = self
            .base
            .split_once("://")
            .map_or(self.base, |(_, rest)| rest);
        let mut repo = serde_json::Map::new();
        for (key, suffix) in [
            ("archive_url", "/{archive_format}{/ref}"),
            ("assignees_url", "/assignees{/user}"),
            ("blobs_url", "/git/blobs{/sha}"),
            ("branches_url", "/branches{/branch}"),
            ("collaborators_url", "/collaborators{/collaborator}"),
            ("comments_url", "/comments{/number}"),
            ("commits_url", "/commits{/sha}"),
            ("compare_url", "/compare/{base}...{head}"),
            ("contents_url", "/contents/{+path}"),
            ("contributors_url", "/contributors"),
            ("deployments_url", "/deployments"),
            ("downloads_url", "/downloads"),
            ("events_url", "/events"),
            ("forks_url", "/forks"),
            ("git_commits_url", "/git/commits{/sha}"),
            ("git_refs_url", "/git/refs{/sha}"),
            ("git_tags_url", "/git/tags{/sha}"),
            ("hooks_url", "/hooks"),
            ("issue_comment_url", "/issues/comments{/number}"),
            ("issue_events_url", "/issues/events{/number}"),
            ("issues_url", "/issues{/number}"),
            ("keys_url", "/keys{/key_id}"),
            ("labels_url", "/labels{/name}"),
            ("languages_url", "/languages"),
            ("merges_url", "/merges"),
            ("milestones_url", "/milestones{/number}"),
            (
                "notifications_url",
                "/notifications{?since,all,participating}",
            ),
            ("pulls_url", "/pulls{/number}"),
            ("releases_url", "/releases{/id}"),
            ("stargazers_url", "/stargazers"),
            ("statuses_url", "/statuses/{sha}"),
            ("subscribers_url", "/subscribers"),
            ("subscription_url", "/subscription"),
            ("tags_url", "/tags"),
            ("teams_url", "/teams"),
            ("trees_url", "/git/trees{/sha}"),
        ] {
            repo.insert(key.to_owned(), Value::String(format!("{api}{suffix}")));
        }
        let fields = json!({
            "id": id,
            "node_id": node_id("R", id),
            "name": self.name,
            "full_name": format!("{}/{}", self.owner, self.name),
            "owner": self.user(self.owner),
            "private": false,
            "html_url": self.html_url(),
            "description": null,
            "fork": false,
            "url": api,
            "clone_url": format!("{}.git", self.html_url()),
            "git_url": format!("git://{host}/{}/{}.git", self.owner, self.name),
            "ssh_url": format!("git@{host}:{}/{}.git", self.owner, self.name),
            "svn_url": self.html_url(),
            "mirror_url": null,
            "homepage": null,
            "language": null,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers": 0,
            "watchers_count": 0,
            "size": 0,
            "default_branch": self.default_branch,
            "open_issues": self.open_issues,
            "open_issues_count": self.open_issues,
            "is_template": false,
            "topics": [],
            "has_issues": self.has_issues,
            "has_projects": false,
            "has_wiki": false,
            "has_pages": false,
            "has_downloads": false,
            "archived": false,
            "disabled": false,
            "visibility": "public",
            "license": null,
            "pushed_at": EPOCH,
            "created_at": EPOCH,
            "updated_at": EPOCH,
        });
        if let Value::Object(fields) = fields {
            repo.extend(fields);
        }
        Value::Object(repo)
    }
}

/// A path segment, percent-encoded.
fn encode(segment: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string()
}

/// `OWNER`, `MEMBER`, `CONTRIBUTOR` or `NONE`: how `login` relates to the
/// repository (the owner owns it; agents and the viewer are members).
pub fn association(login: &str, owner: &str, members: &[String]) -> &'static str {
    if login == owner {
        "OWNER"
    } else if members.iter().any(|m| m == login) {
        "MEMBER"
    } else {
        "CONTRIBUTOR"
    }
}
