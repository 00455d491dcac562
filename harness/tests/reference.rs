//! The reference tables of the book's case-format page
//! (`docs/src/case-format.md`) are the engine's, verbatim: regenerated from
//! its types ([`sdd_harness::loading::reference`]) and compared.
//! `SDD_EVALS_UPDATE_DOCS=1` writes the regenerated tables into the page
//! instead (then read the diff).

use sdd_harness::cli::find_workspace;
use sdd_harness::loading::reference::{self, BEGIN, END};

#[test]
fn the_case_format_pages_reference_tables_match_the_engine() {
    let root = find_workspace(&std::env::current_dir().unwrap()).expect("inside the workspace");
    let path = root.join("docs/src/case-format.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let fresh = reference::splice(&page)
        .unwrap_or_else(|| panic!("{} lacks the lines\n{BEGIN}\n{END}", path.display()));
    if std::env::var_os("SDD_EVALS_UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    if fresh != page {
        let (old, new): (Vec<&str>, Vec<&str>) = (page.lines().collect(), fresh.lines().collect());
        let at = old
            .iter()
            .zip(&new)
            .position(|(a, b)| a != b)
            .unwrap_or(old.len().min(new.len()));
        panic!(
            "the reference tables in {} differ from the engine at line {}:\n  page:   {}\n  engine: {}\n\
             refresh them with `SDD_EVALS_UPDATE_DOCS=1 cargo nextest run -p sdd-harness --test reference` and read the diff",
            path.display(),
            at + 1,
            old.get(at).unwrap_or(&"(end)"),
            new.get(at).unwrap_or(&"(end)"),
        );
    }
}
