//! FNV-1a, for the stable made-up identifiers the mocks show (qmd docids,
//! fallback head SHAs): the same input gives the same id on every machine
//! and Rust version, which `std`'s hasher does not promise.

pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A 40-hex-digit pseudo SHA for `text`.
pub fn fake_sha(text: &str) -> String {
    let a = fnv1a(text.as_bytes());
    let b = fnv1a(format!("{text}\u{0}").as_bytes());
    format!("{a:016x}{b:016x}{:08x}", (a ^ b) as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn stable_and_sha_shaped() {
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        let sha = super::fake_sha("feature/1-login");
        assert_eq!(sha.len(), 40);
        assert_eq!(sha, super::fake_sha("feature/1-login"));
        assert_ne!(sha, super::fake_sha("feature/2-logout"));
    }
}
