//! Which files a command would write, move, truncate or delete — read
//! from its words, for the loop's own state ([`super::Action::Touch`]):
//! the `PreToolUse` hook refuses such a call when a path is the loop's
//! (`.sdd/loop/`, a budget file kept elsewhere, the engine's record).
//!
//! Recognised: `rm`, `unlink`, `rmdir`, `shred`, `mv` (every path: a
//! source is removed), `cp`, `install`, `ln`, `rsync` (the destination,
//! or `-t DIR`), `tee`, `touch`, `truncate`, `dd of=`, `sed -i` (the files
//! after the script), `find … -delete` (its starting points), and
//! `git clean` (with `-x`/`-X` every pathspec, `.` when none; without,
//! the pathspecs), `git checkout`, `git restore`, `git rm`, `git mv` of
//! paths. What a path refers to is decided by the caller; here a path is
//! only as written.

use super::action::Action;
use super::parsed::{Parsed, program};

fn touch(out: &mut Vec<Action>, via: &str, path: &str, deletes: bool) {
    if path.is_empty() || path == "-" {
        return;
    }
    out.push(Action::Touch {
        via: via.to_owned(),
        path: path.to_owned(),
        deletes,
    });
}

/// The file operations of one simple command (its program is `words[0]`).
pub(super) fn simple(words: &[String], out: &mut Vec<Action>) {
    let Some(first) = words.first() else {
        return;
    };
    let name = program(first);
    let args = &words[1..];
    match name {
        "rm" | "unlink" | "rmdir" | "shred" => {
            for p in &Parsed::new(args, &[]).positionals {
                touch(out, name, p, true);
            }
        }
        "mv" => {
            let p = Parsed::new(args, &["-t", "--target-directory", "-S", "--suffix"]);
            for path in &p.positionals {
                touch(out, name, path, true);
            }
            if let Some(t) = p.value(&["-t", "--target-directory"]) {
                touch(out, name, t, false);
            }
        }
        "cp" | "install" | "ln" | "rsync" => {
            let p = Parsed::new(
                args,
                &[
                    "-t",
                    "--target-directory",
                    "-S",
                    "--suffix",
                    "-m",
                    "--mode",
                    "-o",
                    "--owner",
                    "-g",
                    "--group",
                    "-e",
                    "--rsh",
                ],
            );
            match p.value(&["-t", "--target-directory"]) {
                Some(t) => touch(out, name, t, false),
                None => {
                    if p.positionals.len() >= 2
                        && let Some(dest) = p.positionals.last()
                    {
                        // rsync --delete removes under the destination.
                        touch(out, name, dest, p.has(&["--delete"]));
                    }
                }
            }
        }
        "tee" | "touch" => {
            for p in &Parsed::new(args, &["-d", "--date", "-r", "--reference", "-t"]).positionals {
                touch(out, name, p, false);
            }
        }
        "truncate" => {
            for p in &Parsed::new(args, &["-s", "--size", "-r", "--reference"]).positionals {
                touch(out, name, p, true);
            }
        }
        "dd" => {
            for a in args {
                if let Some(path) = a.strip_prefix("of=") {
                    touch(out, name, path, true);
                }
            }
        }
        "sed" | "perl" => {
            let in_place = args.iter().any(|a| {
                a == "--in-place"
                    || a.starts_with("--in-place=")
                    || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains('i'))
            });
            if !in_place {
                return;
            }
            let p = Parsed::new(
                args,
                &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
            );
            let scripted = p.has(&["-e", "--expression", "-f", "--file"]);
            let skip = usize::from(!scripted && name == "sed");
            let skip = if name == "perl" { 0 } else { skip };
            for path in p.positionals.iter().skip(skip) {
                touch(out, &format!("{name} -i"), path, true);
            }
        }
        "find" => {
            if !args
                .iter()
                .any(|a| a == "-delete" || a == "-exec" || a == "-execdir")
            {
                return;
            }
            for a in args {
                if a.starts_with('-') || a == "(" || a == "!" {
                    break;
                }
                touch(out, "find -delete", a, true);
            }
        }
        _ => {}
    }
}

/// The file operations of `git SUBCOMMAND ARGS` (`args` starts at the
/// subcommand).
pub(super) fn git(args: &[String], out: &mut Vec<Action>) {
    let Some(sub) = args.first() else {
        return;
    };
    let rest = &args[1..];
    let via = format!("git {sub}");
    match sub.as_str() {
        "clean" => {
            let p = Parsed::new(rest, &["-e", "--exclude"]);
            let ignored = p.has(&["-x", "-X"]);
            if p.has(&["-n", "--dry-run"]) {
                return;
            }
            if p.positionals.is_empty() {
                if ignored {
                    touch(out, &via, ".", true);
                }
                return;
            }
            for path in &p.positionals {
                touch(out, &via, path, ignored);
            }
        }
        "checkout" | "restore" | "rm" | "mv" => {
            let p = Parsed::new(
                rest,
                &["-s", "--source", "-b", "-B", "--orphan", "--conflict"],
            );
            for path in &p.positionals {
                touch(out, &via, path, sub == "rm" || sub == "mv");
            }
        }
        _ => {}
    }
}
