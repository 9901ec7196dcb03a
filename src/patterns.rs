//! Built-in patterns and tables, compiled once on first use.
//!
//! They are constants of this crate, each exercised by the unit tests of the module that holds
//! it; one that fails to build is a bug, so it fails loudly (a panic at first use, caught per
//! request) instead of silently switching its feature off.

use regex::Regex;

/// A regex from a built-in pattern.
pub fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("built-in pattern {pattern:?} does not compile: {e}"))
}

/// The value of a built-in table's builder.
pub fn built<T, E: std::fmt::Display>(what: &str, result: Result<T, E>) -> T {
    result.unwrap_or_else(|e| panic!("built-in {what} does not build: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_patterns_build_and_bad_ones_fail_loudly() {
        assert!(regex(r"^\d+$").is_match("42"));
        assert!(std::panic::catch_unwind(|| regex(r"(unclosed")).is_err());
        assert_eq!(built("table", Ok::<u8, String>(7)), 7);
        assert!(std::panic::catch_unwind(|| built("table", Err::<u8, _>("broken"))).is_err());
    }
}
