//! The `qmd` command line `mock-qmd` imitates: `status`, `search`,
//! `vsearch`, `query`, `update`, `embed` and `get`, with the output shapes
//! of the real tool (its `--json` array of `{docid, score, file, line,
//! title, snippet}`, its `--files` lines, its plain-text status and update
//! reports), answered from the fixture [`Corpus`].
//!
//! Before any verb runs, the [`QmdState`] decides: `down` prints the
//! tool's cannot-reach-the-index error on stderr and exits 1 (what a
//! wrapped skill turns into `qmd-unreachable`); `slow <ms>` waits first.
//! The wait goes through a caller-supplied `sleep`, so unit tests check it
//! without waiting. The mock's own failures are prefixed `[mock-qmd]` and
//! use exit statuses no real answer uses.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use super::corpus::{Corpus, Hit};
use super::state::{self, QmdState};

/// `down`: the index cannot be reached (the real tool's status for errors).
pub const EXIT_DOWN: u8 = 1;
/// Usage error (clap's status).
pub const EXIT_USAGE: u8 = 2;
/// The state file cannot be read or parsed.
pub const EXIT_BAD_STATE: u8 = 90;
/// The fixture collections cannot be read (or `MOCK_QMD_FIXTURES` is unset).
pub const EXIT_BAD_FIXTURES: u8 = 91;

pub const ENV_STATE: &str = "MOCK_QMD_STATE";
pub const ENV_FIXTURES: &str = "MOCK_QMD_FIXTURES";

/// Where the index would be; shown by `status` and in the `down` error.
const INDEX: &str = "~/.cache/qmd/index.sqlite";

/// What the binary gathers from its environment.
#[derive(Debug, Clone, Default)]
pub struct QmdEnv {
    /// `MOCK_QMD_FIXTURES`: the directory of collections.
    pub fixtures: Option<PathBuf>,
    /// `MOCK_QMD_STATE`: the state file.
    pub state: Option<PathBuf>,
}

#[derive(Debug, Parser)]
#[command(
    name = "qmd",
    version = "mock",
    about = "Mock of the qmd markdown search CLI"
)]
struct Cli {
    /// Use a named index (accepted, ignored).
    #[arg(long, global = true)]
    index: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show index status and collections.
    Status,
    /// Keyword search.
    Search(SearchArgs),
    /// Vector search.
    #[command(alias = "vector-search")]
    Vsearch(SearchArgs),
    /// Hybrid search with reranking.
    #[command(alias = "deep-search")]
    Query(SearchArgs),
    /// Re-index all collections.
    Update {
        #[arg(long)]
        pull: bool,
    },
    /// Generate vector embeddings.
    Embed {
        #[arg(short, long)]
        force: bool,
        #[arg(short = 'c', long = "collection")]
        collection: Vec<String>,
    },
    /// Print a document.
    Get {
        file: String,
        #[arg(long)]
        full: bool,
        #[arg(long)]
        no_line_numbers: bool,
        #[arg(long)]
        line_numbers: bool,
    },
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// The query (several words are joined).
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    #[arg(short = 'c', long = "collection")]
    collection: Vec<String>,
    #[arg(short = 'n')]
    n: Option<usize>,
    #[arg(long)]
    all: bool,
    #[arg(long)]
    min_score: Option<f64>,
    #[arg(long)]
    full: bool,
    #[arg(long)]
    line_numbers: bool,
    #[arg(long)]
    json: bool,
    #[arg(long)]
    files: bool,
    #[arg(long)]
    md: bool,
    #[arg(long)]
    csv: bool,
    #[arg(long)]
    xml: bool,
    /// cli | json | csv | md | xml | files
    #[arg(long)]
    format: Option<String>,
    #[arg(long)]
    explain: bool,
    #[arg(long)]
    intent: Option<String>,
    #[arg(long)]
    no_rerank: bool,
    #[arg(short = 'C', long)]
    candidate_limit: Option<usize>,
    #[arg(long)]
    full_path: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Cli,
    Json,
    Files,
}

impl SearchArgs {
    fn format(&self) -> Format {
        match self.format.as_deref() {
            Some("json") => Format::Json,
            Some("files") => Format::Files,
            Some(_) => Format::Cli,
            None if self.json => Format::Json,
            None if self.files => Format::Files,
            None => Format::Cli,
        }
    }
}

/// Runs one `qmd` invocation; its exit status.
pub fn run<I, T>(
    args: I,
    env: &QmdEnv,
    out: &mut dyn Write,
    err: &mut dyn Write,
    sleep: &mut dyn FnMut(Duration),
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            if e.use_stderr() {
                let _ = write!(err, "{}", e.render());
                return EXIT_USAGE;
            }
            let _ = write!(out, "{}", e.render());
            return 0;
        }
    };
    let state = match state::read(env.state.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "[mock-qmd] {e}");
            let _ = writeln!(
                err,
                "[mock-qmd] help: write `up`, `down` or `slow <ms>` to ${ENV_STATE}"
            );
            return EXIT_BAD_STATE;
        }
    };
    if state == QmdState::Down {
        let _ = writeln!(
            err,
            "Error: cannot reach the qmd index at {INDEX} (SQLITE_CANTOPEN: unable to open database file)"
        );
        let _ = writeln!(
            err,
            "Is the qmd daemon running? Run 'qmd status' to check, then 'qmd update'."
        );
        return EXIT_DOWN;
    }
    if let Some(delay) = state.delay() {
        sleep(delay);
    }
    let Some(root) = &env.fixtures else {
        let _ = writeln!(err, "[mock-qmd] ${ENV_FIXTURES} is not set");
        let _ = writeln!(
            err,
            "[mock-qmd] help: point it at a directory of collections, e.g. fixtures/qmd"
        );
        return EXIT_BAD_FIXTURES;
    };
    let corpus = match Corpus::load(root) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(
                err,
                "[mock-qmd] cannot read the collections in {}: {e}",
                root.display()
            );
            return EXIT_BAD_FIXTURES;
        }
    };
    let written = match &cli.command {
        Command::Status => status(&corpus, out),
        Command::Search(a) | Command::Vsearch(a) | Command::Query(a) => {
            if let Some(missing) = a
                .collection
                .iter()
                .find(|c| !corpus.collections.contains_key(*c))
            {
                let _ = writeln!(err, "Collection not found: {missing}");
                return EXIT_DOWN;
            }
            search(&corpus, a, out)
        }
        Command::Update { .. } => update(&corpus, out),
        Command::Embed { .. } => writeln!(out, "✓ All content hashes already have embeddings."),
        Command::Get {
            file,
            no_line_numbers,
            ..
        } => match corpus.get(file) {
            Some(doc) if *no_line_numbers => write!(out, "{}", doc.body),
            Some(doc) => doc
                .body
                .lines()
                .enumerate()
                .try_for_each(|(i, l)| writeln!(out, "{}: {l}", i + 1)),
            None => {
                let _ = writeln!(err, "Document not found: {file}");
                return EXIT_DOWN;
            }
        },
    };
    match written {
        Ok(()) => 0,
        Err(_) => EXIT_DOWN,
    }
}

fn status(corpus: &Corpus, out: &mut dyn Write) -> std::io::Result<()> {
    let total = corpus.documents();
    let bytes: usize = corpus
        .collections
        .values()
        .flatten()
        .map(|d| d.body.len())
        .sum();
    writeln!(out, "QMD Status\n")?;
    writeln!(out, "Index: {INDEX}")?;
    writeln!(out, "Size:  {:.1} KB\n", (bytes as f64 + 4096.0) / 1024.0)?;
    writeln!(out, "Documents")?;
    writeln!(out, "  Total:    {total} files indexed")?;
    writeln!(out, "  Vectors:  {total} embedded")?;
    if corpus.collections.is_empty() {
        return writeln!(
            out,
            "\nNo collections. Run 'qmd collection add .' to index markdown files."
        );
    }
    writeln!(out, "\nCollections")?;
    for (name, docs) in &corpus.collections {
        writeln!(out, "  {name} (qmd://{name}/)")?;
        writeln!(out, "    Pattern:  **/*.md")?;
        writeln!(out, "    Files:    {} (updated 1d ago)", docs.len())?;
    }
    Ok(())
}

fn update(corpus: &Corpus, out: &mut dyn Write) -> std::io::Result<()> {
    let n = corpus.collections.len();
    if n == 0 {
        return writeln!(
            out,
            "No collections found. Run 'qmd collection add .' to index markdown files."
        );
    }
    writeln!(out, "Updating {n} collection(s)...\n")?;
    for (i, (name, docs)) in corpus.collections.iter().enumerate() {
        writeln!(out, "[{}/{n}] {name} (**/*.md)", i + 1)?;
        writeln!(out, "Collection: qmd://{name}/ (**/*.md)")?;
        writeln!(
            out,
            "\nIndexed: 0 new, 0 updated, {} unchanged, 0 removed\n",
            docs.len()
        )?;
    }
    writeln!(out, "✓ All collections updated.")
}

fn search(corpus: &Corpus, args: &SearchArgs, out: &mut dyn Write) -> std::io::Result<()> {
    let format = args.format();
    let default_limit = if format == Format::Cli { 5 } else { 20 };
    let limit = if args.all {
        usize::MAX
    } else {
        args.n.unwrap_or(default_limit)
    };
    let min = args.min_score.unwrap_or(0.0);
    let hits: Vec<Hit<'_>> = corpus
        .search(&args.query.join(" "), &args.collection, limit)
        .into_iter()
        .filter(|h| h.score >= min)
        .collect();
    match format {
        Format::Json => {
            let items: Vec<_> = hits
                .iter()
                .map(|h| {
                    let mut item = json!({
                        "docid": format!("#{}", h.doc.docid()),
                        "score": h.score,
                        "file": h.doc.uri(),
                        "line": h.line,
                        "title": h.doc.title,
                    });
                    if args.full {
                        item["body"] = json!(h.doc.body);
                    } else {
                        item["snippet"] = json!(h.snippet);
                    }
                    item
                })
                .collect();
            let text = serde_json::to_string_pretty(&items).map_err(std::io::Error::other)?;
            writeln!(out, "{text}")
        }
        Format::Files => hits
            .iter()
            .try_for_each(|h| writeln!(out, "#{},{:.2},{}", h.doc.docid(), h.score, h.doc.uri())),
        Format::Cli if hits.is_empty() => writeln!(out, "No results found."),
        Format::Cli => hits.iter().try_for_each(|h| {
            writeln!(out, "{}:{} #{}", h.doc.uri(), h.line, h.doc.docid())?;
            writeln!(out, "Title: {}", h.doc.title)?;
            writeln!(out, "Score: {:.0}%\n", h.score * 100.0)?;
            writeln!(
                out,
                "{}\n",
                if args.full {
                    h.doc.body.trim_end()
                } else {
                    &h.snippet
                }
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(dir: &tempfile::TempDir, state: &str) -> QmdEnv {
        let col = dir.path().join("fixtures/adr");
        std::fs::create_dir_all(&col).unwrap();
        std::fs::write(
            col.join("0024-qmd.md"),
            "# ADR-0024\n\nqmd is a hard dependency.\n",
        )
        .unwrap();
        let state_file = dir.path().join("state");
        std::fs::write(&state_file, state).unwrap();
        QmdEnv {
            fixtures: Some(dir.path().join("fixtures")),
            state: Some(state_file),
        }
    }

    fn call(env: &QmdEnv, args: &[&str]) -> (u8, String, String, Vec<Duration>) {
        let (mut out, mut err, mut slept) = (Vec::new(), Vec::new(), Vec::new());
        let argv = std::iter::once("qmd").chain(args.iter().copied());
        let code = run(argv, env, &mut out, &mut err, &mut |d| slept.push(d));
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
            slept,
        )
    }

    #[test]
    fn slow_asks_to_wait_before_answering() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(&dir, "slow 1500");
        let (code, out, _, slept) = call(&e, &["search", "dependency", "--json"]);
        assert_eq!(code, 0);
        assert_eq!(slept, vec![Duration::from_millis(1500)]);
        assert!(out.contains("\"file\": \"qmd://adr/0024-qmd.md\""), "{out}");
    }

    #[test]
    fn down_fails_like_the_real_tool_and_bad_state_is_the_mocks_own_error() {
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err, _) = call(&env(&dir, "down"), &["status"]);
        assert_eq!((code, out.as_str()), (EXIT_DOWN, ""));
        assert!(err.contains("cannot reach the qmd index"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let (code, _, err, _) = call(&env(&dir, "wobbly"), &["status"]);
        assert_eq!(code, EXIT_BAD_STATE);
        assert!(err.starts_with("[mock-qmd] state file"), "{err}");
    }

    #[test]
    fn unknown_collection_and_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(&dir, "up");
        let (code, _, err, _) = call(&e, &["search", "x", "-c", "nope"]);
        assert_eq!(
            (code, err.trim()),
            (EXIT_DOWN, "Collection not found: nope")
        );
        assert_eq!(call(&e, &["frobnicate"]).0, EXIT_USAGE);
        let (code, out, _, _) = call(&e, &["get", "adr/0024-qmd.md"]);
        assert_eq!(code, 0);
        assert!(out.starts_with("1: # ADR-0024"), "{out}");
    }
}
