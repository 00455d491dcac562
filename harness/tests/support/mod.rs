//! Shared by the harness's integration tests: where the workspace is.
//! Tests run in the package directory (cargo, nextest, and nextest
//! archives after remapping), so the workspace is found from there.

use std::path::PathBuf;

use sdd_harness::cli::find_workspace;
use sdd_harness::loading::fixtures::Fixtures;

pub fn workspace() -> PathBuf {
    let here = std::env::current_dir().expect("a current directory");
    find_workspace(&here).expect("the tests run inside the workspace")
}

pub fn fixtures() -> Fixtures {
    Fixtures::new(workspace().join("fixtures"))
}
