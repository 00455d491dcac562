//! Durations as cases write them: whole numbers with a unit, `90s`, `50m`,
//! `2h`, or several together (`1h30m`). Used for the clock (`advance`) and
//! a case's time limit (`timeout`); a machine's skew may be negative
//! (`-2m`: behind).

use std::time::Duration;

/// Parses `text`; the error says what is accepted.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration like 90s, 50m, 2h or 1h30m");
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
        digits.clear();
    }
    if !digits.is_empty() || text.trim().is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// Parses `text`, which may start with `-`: a machine's skew.
pub fn parse_signed(text: &str) -> Result<jiff::SignedDuration, String> {
    let (negative, rest) = match text.trim().strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.trim()),
    };
    let d = parse(rest).map_err(|_| format!("`{text}` is not a skew like 3m, -2m or 90s"))?;
    let d = jiff::SignedDuration::try_from(d).map_err(|e| e.to_string())?;
    Ok(if negative { -d } else { d })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_sums() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("50m"), Ok(Duration::from_secs(3000)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        for bad in ["", "5", "m", "5d", "-5m", "5 m"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_skew_may_be_behind() {
        assert_eq!(parse_signed("-2m"), Ok(jiff::SignedDuration::from_mins(-2)));
        assert_eq!(parse_signed("90s"), Ok(jiff::SignedDuration::from_secs(90)));
        assert!(parse_signed("--2m").is_err());
    }
}
