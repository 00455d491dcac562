//! A command's arguments as flags, values and positionals, and its
//! program's name: what the readers of `gh`, `curl`, `git` and the file
//! commands share.

/// The program's name: its path's last part.
pub(super) fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Flags, values and positionals of a command's arguments: flags listed
/// in `valued` take the next word (or `=VALUE`, or a short flag's attached
/// rest).
pub(super) struct Parsed {
    pub(super) flags: Vec<(String, Option<String>)>,
    pub(super) positionals: Vec<String>,
}

impl Parsed {
    pub(super) fn new(args: &[String], valued: &[&str]) -> Self {
        let mut flags = Vec::new();
        let mut positionals = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            i += 1;
            if a == "--" {
                positionals.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
                    None => (a.clone(), None),
                };
                let value = if inline.is_some() {
                    inline
                } else if valued.contains(&name.as_str()) {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    None
                };
                flags.push((name, value));
            } else if a.len() > 1 && a.starts_with('-') {
                let mut chars = a[1..].chars();
                let short = format!("-{}", chars.next().unwrap_or('-'));
                let attached = chars.as_str();
                if valued.contains(&short.as_str()) {
                    let value = if attached.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(attached.to_owned())
                    };
                    flags.push((short, value));
                } else {
                    for c in a[1..].chars() {
                        flags.push((format!("-{c}"), None));
                    }
                }
            } else {
                positionals.push(a.clone());
            }
        }
        Self { flags, positionals }
    }

    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    pub(super) fn value(&self, names: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_deref())
    }

    pub(super) fn values<'a>(&'a self, names: &'a [&'a str]) -> impl Iterator<Item = &'a str> + 'a {
        self.flags
            .iter()
            .filter(move |(n, _)| names.contains(&n.as_str()))
            .filter_map(|(_, v)| v.as_deref())
    }
}
